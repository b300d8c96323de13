# mutant: diagnose_line_from_stack
# exercise: diagnose
# replaces: diagnose_solution
# why: the line from where the culprit is now (its innermost stack frame) even when it made the divergent call:
#   right while it is still blocked in that call, wrong once it moved past it (async_extra: the barrier)
@@
-        return {"rank": rank, "seq": div.seq, "op": call["op"], "line": int(call["site"].rsplit(":", 1)[1])}
+        return {"rank": rank, "seq": div.seq, "op": call["op"], "line": lab05.user_frames(err.stacks[rank])[0].line}
