# mutant: buckets_no_cap
# exercise: bucketed
# replaces: buckets_solution
# why: only the first bucket is capped: everything else in one
@@
-    order (last parameter first)."""
+    order."""
@@
-            current, filled, limit = [], 0, cap_bytes
+            current, filled, limit = [], 0, float('inf')
