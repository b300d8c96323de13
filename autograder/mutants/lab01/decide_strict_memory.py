# mutant: decide_strict_memory
# exercise: decide
# replaces: decide_solution
# why: a candidate exactly on the memory budget counts as over it
@@
-    ok = c[(c["mem_bytes"] <= mem_budget) & (c["tp"] <= gpus_per_node)
+    ok = c[(c["mem_bytes"] < mem_budget) & (c["tp"] <= gpus_per_node)
