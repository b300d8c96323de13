# mutant: stragglers_no_minimum
# exercise: stragglers
# replaces: stragglers_solution
# why: largest remainders without the >= 1 rule: a very slow rank gets 0 samples
@@
-        if sizes[r] == 0:
+        if sizes[r] < 0:
