# mutant: frame_transfer_group_end
# exercise: frame
# replaces: frame_solution
# why: transfer ends when the last rank left the collective, not when this rank did
@@
-    return calls.assign(wait_s=last - calls["t_start"], transfer_s=calls["t_end"] - last)
+    end = calls.groupby(["group", "seq"])["t_end"].transform("max")
+    return calls.assign(wait_s=last - calls["t_start"], transfer_s=end - last)
