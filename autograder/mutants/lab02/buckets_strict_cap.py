# mutant: buckets_strict_cap
# exercise: bucketed
# replaces: buckets_solution
# why: boundary of a ">=" rule: closes a bucket only once it holds MORE than its limit, so a bucket that
#   reaches its limit exactly keeps growing (torch closes it)
@@
-        if filled >= limit:
+        if filled > limit:
