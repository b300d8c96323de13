# mutant: diagnose_no_stack
# exercise: diagnose
# replaces: diagnose_solution
# why: when the culprit never made the call, reports its last traced collective's line instead of reading its
#   stack (the DDP hang: the culprit is stuck in backward, which the trace cannot show)
@@
-    if div is None:
-        raise ValueError("the ranks' collective sequences agree: no divergence to diagnose")
-    rank = div.ranks[0]  # the odd one out; the majority are waiting for it
+    rank = div.ranks[0]
@@
-    # it never made that call: it is stuck somewhere else (DDP's C++ collectives are not traced)
-    frame = lab05.user_frames(err.stacks[rank])[0]
-    return {"rank": rank, "seq": div.seq, "op": None, "line": frame.line}
+    last = err.last_collective.get(rank) or {"site": ":-1"}
+    return {"rank": rank, "seq": div.seq, "op": None, "line": int(last["site"].rsplit(":", 1)[1])}
