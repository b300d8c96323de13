# mutant: frame_wait_by_seq_only
# exercise: frame
# replaces: frame_solution
# why: identifies a collective by its seq alone: calls of different groups with the same seq are merged
@@
-    last = calls.groupby(["group", "seq"])["t_start"].transform("max")  # when the last rank arrived
+    last = calls.groupby("seq")["t_start"].transform("max")  # when the last rank arrived
