# mutant: diagnose_blame_waiting
# exercise: diagnose
# replaces: diagnose_solution
# why: blames the first rank still waiting inside a collective (last_collective not done): a healthy survivor
#   stuck behind the culprit, not the rank that diverged
@@
-    if div is None:
-        raise ValueError("the ranks' collective sequences agree: no divergence to diagnose")
-    rank = div.ranks[0]  # the odd one out; the majority are waiting for it
+    waiting = [r for r, c in sorted(err.last_collective.items()) if c is not None and not c.get("done")]
+    rank = waiting[0] if waiting else div.ranks[0]
@@
-    # it never made that call: it is stuck somewhere else (DDP's C++ collectives are not traced)
