# mutant: frdump_outermost_frame
# exercise: frdump
# replaces: frdump_solution
# why: the outermost frame in hangs.py (the case function's call of a helper), not the innermost (async_extra's
#   logging helper, ddp_uneven's train-step helper)
@@
-            line = next(f["line"] for f in e["frames"] if f["file"].endswith("hangs.py"))
+            line = [f["line"] for f in e["frames"] if f["file"].endswith("hangs.py")][-1]
