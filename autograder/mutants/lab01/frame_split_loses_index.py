# mutant: frame_split_loses_index
# exercise: frame
# replaces: frame_solution
# why: the latest arrival merged back onto the calls: the numbers are right, but merge returns a fresh
#      RangeIndex, so the rows no longer line up with the trace they came from
@@
-    last = calls.groupby(["group", "seq"])["t_start"].transform("max")  # when the last rank arrived
-    return calls.assign(wait_s=last - calls["t_start"], transfer_s=calls["t_end"] - last)
+    latest = calls.groupby(["group", "seq"], as_index=False)["t_start"].max().rename(columns={"t_start": "last"})
+    m = calls.merge(latest, on=["group", "seq"], how="left")
+    return m.assign(wait_s=m["last"] - m["t_start"], transfer_s=m["t_end"] - m["last"]).drop(columns="last")
