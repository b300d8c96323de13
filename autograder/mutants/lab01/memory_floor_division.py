# mutant: memory_floor_division
# exercise: memory
# replaces: memory_solution
# why: integer division rounds the model-parallel share down
@@
-    local = n_params / (tp * pp)  # model parallelism splits every model state
+    local = n_params // (tp * pp)  # model parallelism splits every model state
