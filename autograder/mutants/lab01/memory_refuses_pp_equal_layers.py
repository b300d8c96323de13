# mutant: memory_refuses_pp_equal_layers
# exercise: memory
# replaces: memory_solution
# why: refuses one layer per stage (>= instead of >)
@@
-    if layers is not None and pp > layers:
+    if layers is not None and pp >= layers:
