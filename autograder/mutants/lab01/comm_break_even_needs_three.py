# mutant: comm_break_even_needs_three
# exercise: comm
# replaces: comm_solution
# why: refuses the break-even at world 2
@@
-    if world < 2:
+    if world < 3:
