# mutant: broadcast_assign_new
# exercise: replicas
# replaces: broadcast_solution
# why: right values, but load_state_dict(assign=True) swaps in new tensor objects (an optimizer keeps the old)
@@
-        for t in [*model.parameters(), *model.buffers()]:
-            dist.broadcast(t, src=src)
+        state = {k: v.clone() for k, v in model.state_dict().items()}
+        for t in state.values():
+            dist.broadcast(t, src=src)
+        model.load_state_dict(state, assign=True)
