# mutant: dcp_latest_sees_staging
# exercise: dcp
# replaces: dcp_solution
# why: any directory whose name ends in step-N counts: a complete, unpublished .tmp-step staging dir wins
@@
-    done = [d for d in root.glob("step-*") if d.is_dir() and (d / ".metadata").is_file()]
-    return max(done, key=lambda d: int(d.name.split("-")[1]), default=None)
+    done = [d for d in root.glob("*step-*") if d.is_dir() and (d / ".metadata").is_file()]
+    return max(done, key=lambda d: int(d.name.rsplit("-", 1)[1]), default=None)
