# mutant: memory_divides_tp_and_pp_separately
# exercise: memory
# replaces: memory_solution
# why: checks that world divides by tp and by pp, not by their product: world 12 with tp 2 and pp 4 passes
#      and gets dp = 12 // 8 = 1
@@
-    if world % (tp * pp):
+    if world % tp or world % pp:
