# mutant: diagnose_line_last_collective
# exercise: diagnose
# replaces: diagnose_solution
# why: the line of the culprit's latest collective (err.last_collective), not of its divergent call: the same
#   while it is blocked in that call, the barrier once it moved past an async one (async_extra)
@@
-        return {"rank": rank, "seq": div.seq, "op": call["op"], "line": int(call["site"].rsplit(":", 1)[1])}
+        last = err.last_collective[rank]["site"]
+        return {"rank": rank, "seq": div.seq, "op": call["op"], "line": int(last.rsplit(":", 1)[1])}
