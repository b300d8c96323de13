# mutant: frame_transfer_whole_call
# exercise: frame
# replaces: frame_solution
# why: counts the whole call as transfer, so the waiting is counted twice (wait + transfer > t_end - t_start)
@@
-    return calls.assign(wait_s=last - calls["t_start"], transfer_s=calls["t_end"] - last)
+    return calls.assign(wait_s=last - calls["t_start"], transfer_s=calls["t_end"] - calls["t_start"])
