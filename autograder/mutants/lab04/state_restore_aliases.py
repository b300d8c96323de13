# mutant: state_restore_aliases
# exercise: state
# replaces: state_solution
# why: restore passes the state's tensors to the optimizer uncopied: AdamW updates them in place (issue 11)
@@
-    state = copy.deepcopy(state)
