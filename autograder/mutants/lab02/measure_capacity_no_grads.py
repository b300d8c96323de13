# mutant: measure_capacity_no_grads
# exercise: measure
# replaces: measure_solution
# why: capacity counts weights and optimizer state but forgets the gradients
@@
-    the columns samples_per_s, efficiency and core_s_per_1k added (definitions above)."""
+    the
+    columns samples_per_s, efficiency and core_s_per_1k added (definitions above)."""
@@
-    excluded). ``optimizer``: "sgd", "sgd_momentum" or "adam"; anything else raises ValueError naming it."""
+    excluded).
+    ``optimizer``: "sgd", "sgd_momentum" or "adam"; anything else raises ValueError naming it."""
@@
-    per_param = 4 + 4 + (0 if gradient_as_bucket_view else 4) + state[optimizer]
+    per_param = 4 + (0 if gradient_as_bucket_view else 4) + state[optimizer]
