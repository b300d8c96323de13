# mutant: state_no_scheduler
# exercise: state
# replaces: state_solution
# why: forgets the LR scheduler: the cosine restarts at its peak
@@
-    tr.scheduler.load_state_dict(state["scheduler"])
