# mutant: buckets_forward_order
# exercise: bucketed
# replaces: buckets_solution
# why: builds buckets in registration (forward) order: the first bucket is ready last
@@
-    order (last parameter first)."""
+    order."""
@@
-    for i in reversed(range(len(sizes))):  # reverse: gradients of the last layers are ready first
+    for i in range(len(sizes)):  # reverse: gradients of the last layers are ready first
