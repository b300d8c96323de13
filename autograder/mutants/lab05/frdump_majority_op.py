# mutant: frdump_majority_op
# exercise: frdump
# replaces: frdump_solution
# why: the op most ranks called at the divergence (what the waiting ranks are in), not the culprit's
@@
-            return {"rank": rank, "group": key[0], "seq": key[1], "op": e["op"], "line": line}
+            ops = [es[key]["op"] for es in by_key.values() if key in es]
+            return {"rank": rank, "group": key[0], "seq": key[1], "op": max(ops, key=ops.count), "line": line}
