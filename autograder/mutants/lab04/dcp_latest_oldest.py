# mutant: dcp_latest_oldest
# exercise: dcp
# replaces: dcp_solution
# why: returns the oldest complete checkpoint, not the newest
@@
-    return max(done, key=lambda d: int(d.name.split("-")[1]), default=None)
+    return min(done, key=lambda d: int(d.name.split("-")[1]), default=None)
