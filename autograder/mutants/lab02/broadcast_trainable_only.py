# mutant: broadcast_trainable_only
# exercise: replicas
# replaces: broadcast_solution
# why: skips frozen parameters (requires_grad=False), as if only trainable state mattered
@@
-        for t in [*model.parameters(), *model.buffers()]:
+        for t in [*(p for p in model.parameters() if p.requires_grad), *model.buffers()]:
