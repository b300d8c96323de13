# mutant: diagnose_stack_always
# exercise: diagnose
# replaces: diagnose_solution
# why: the line from the culprit's stack even when it made the call: where it is stuck now (a later
#   collective), not where it diverged
@@
-        return {"rank": rank, "seq": div.seq, "op": call["op"], "line": int(call["site"].rsplit(":", 1)[1])}
+        return {"rank": rank, "seq": div.seq, "op": call["op"], "line": lab05.user_frames(err.stacks[rank])[0].line}
