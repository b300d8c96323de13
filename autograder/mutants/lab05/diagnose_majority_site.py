# mutant: diagnose_majority_site
# exercise: diagnose
# replaces: diagnose_solution
# why: names the right rank but reports the line and op where the healthy majority wait, not the culprit's
@@
-    if div is None:
-        raise ValueError("the ranks' collective sequences agree: no divergence to diagnose")
-    rank = div.ranks[0]  # the odd one out; the majority are waiting for it
-    call = div.calls.get(rank)
-    if call is not None:
-        return {"rank": rank, "seq": div.seq, "op": call["op"], "line": int(call["site"].rsplit(":", 1)[1])}
-    # it never made that call: it is stuck somewhere else (DDP's C++ collectives are not traced)
-    frame = lab05.user_frames(err.stacks[rank])[0]
-    return {"rank": rank, "seq": div.seq, "op": None, "line": frame.line}
+    rank = div.ranks[0]
+    call = next(c for r, c in div.calls.items() if r not in div.ranks and c is not None)
+    return {"rank": rank, "seq": div.seq, "op": call["op"], "line": int(call["site"].rsplit(":", 1)[1])}
