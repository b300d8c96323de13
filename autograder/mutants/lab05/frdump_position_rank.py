# mutant: frdump_position_rank
# exercise: frdump
# replaces: frdump_solution
# why: numbers the ranks by their position in entries, not by its keys (right only when the keys are 0, 1, 2 in
#   order)
@@
-    by_key = {r: {(e["group"], e["seq"]): e for e in es} for r, es in entries.items()}
+    by_key = {r: {(e["group"], e["seq"]): e for e in es} for r, es in enumerate(entries.values())}
