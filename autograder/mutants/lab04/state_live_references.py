# mutant: state_live_references
# exercise: state
# replaces: state_solution
# why: returns the state_dicts themselves: the optimizer step after capture rewrites the snapshot
@@
-    return copy.deepcopy(state)
+    return state
