# mutant: zero1_floor_chunk
# exercise: zero1
# replaces: zero1_solution
# why: chunk = numel // world: uneven shards lose the tail elements (never updated)
@@
-    chunk = math.ceil(numel / world)
-    start = min(rank * chunk, numel)
-    return start, min(start + chunk, numel)
+    chunk = numel // world
+    start = rank * chunk
+    return start, start + chunk
