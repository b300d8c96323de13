# mutant: frame_wait_from_first
# exercise: frame
# replaces: frame_solution
# why: measures waiting from the first rank to arrive instead of until the last one did (waits come out <= 0)
@@
-    last = calls.groupby(["group", "seq"])["t_start"].transform("max")  # when the last rank arrived
+    last = calls.groupby(["group", "seq"])["t_start"].transform("min")  # when the last rank arrived
