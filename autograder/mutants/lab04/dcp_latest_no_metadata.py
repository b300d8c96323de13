# mutant: dcp_latest_no_metadata
# exercise: dcp
# replaces: dcp_solution
# why: trusts the step name alone: a newer step directory without .metadata (torn) is returned
@@
-    done = [d for d in root.glob("step-*") if d.is_dir() and (d / ".metadata").is_file()]
+    done = [d for d in root.glob("step-*") if d.is_dir()]
