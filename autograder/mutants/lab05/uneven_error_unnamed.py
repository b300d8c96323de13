# mutant: uneven_error_unnamed
# exercise: uneven
# replaces: uneven_solution
# why: refuses an unknown strategy without naming it
@@
-    raise ValueError(f"strategy must be 'join', 'drop_last' or 'pad', got {strategy!r}")
+    raise ValueError("unknown strategy: use join, drop_last or pad")
