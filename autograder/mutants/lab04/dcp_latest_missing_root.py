# mutant: dcp_latest_missing_root
# exercise: dcp
# replaces: dcp_solution
# why: lists the root without checking it exists: a missing root raises FileNotFoundError instead of None
@@
-    if not root.is_dir():
-        return None
-    done = [d for d in root.glob("step-*") if d.is_dir() and (d / ".metadata").is_file()]
+    done = [d for d in root.iterdir() if d.name.startswith("step-") and (d / ".metadata").is_file()]
