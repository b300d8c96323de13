# mutant: frdump_last_entry
# exercise: frdump
# replaces: frdump_solution
# why: the line of the culprit's last recorded entry (where it is now), not of its entry at the divergence:
#   async_extra's culprit went on to record the barrier
@@
-            line = next(f["line"] for f in e["frames"] if f["file"].endswith("hangs.py"))
+            line = next(f["line"] for f in entries[rank][-1]["frames"] if f["file"].endswith("hangs.py"))
