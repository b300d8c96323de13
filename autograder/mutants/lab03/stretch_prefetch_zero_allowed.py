# mutant: stretch_prefetch_zero_allowed
# exercise: prefetch
# replaces: prefetch_solution
# why: refuses only negative depths (strict instead of inclusive bound): depth 0 silently sets empty lists
@@
-    if depth < 1:
+    if depth < 0:
