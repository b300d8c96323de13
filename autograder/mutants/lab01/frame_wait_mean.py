# mutant: frame_wait_mean
# exercise: frame
# replaces: frame_solution
# why: waits until the mean arrival instead of the last one (equal to the latest only for two ranks)
@@
-    last = calls.groupby(["group", "seq"])["t_start"].transform("max")  # when the last rank arrived
+    last = calls.groupby(["group", "seq"])["t_start"].transform("mean")  # when the last rank arrived
