# mutant: frdump_majority_rank
# exercise: frdump
# replaces: frdump_solution
# why: names a rank of the agreeing majority (the ranks left waiting), not the odd one out
@@
-            rank = next(r for r, s in sig.items() if list(sig.values()).count(s) == 1)
+            rank = next(r for r, s in sig.items() if list(sig.values()).count(s) > 1)
