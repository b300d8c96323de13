# mutant: zero1_spread_remainder
# exercise: zero1
# replaces: zero1_solution
# why: tensor_split's rule (the first numel % world ranks get one more) instead of ceil chunks with the
#      short shard last: a remainder rule the exercise does not ask for, and the padded chunks no longer line up
@@
-    chunk = math.ceil(numel / world)
-    start = min(rank * chunk, numel)
-    return start, min(start + chunk, numel)
+    base, extra = divmod(numel, world)
+    start = rank * base + min(rank, extra)
+    return start, start + base + (rank < extra)
