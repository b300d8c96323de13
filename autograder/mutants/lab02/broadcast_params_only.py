# mutant: broadcast_params_only
# exercise: replicas
# replaces: broadcast_solution
# why: broadcasts parameters but not buffers
@@
-        for t in [*model.parameters(), *model.buffers()]:
+        for t in list(model.parameters()):
