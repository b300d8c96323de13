# mutant: no_optimizer_restore
# exercise: state
# replaces: fttrainer/state.py
# why: the optimizer state is saved but not loaded: parameters equal at the resume, AdamW's moments start
#      again from zero, so the run drifts only in the steps after it
@@
-    optimizer.load_state_dict(shared["optimizer"])
