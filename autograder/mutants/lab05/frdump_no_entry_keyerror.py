# mutant: frdump_no_entry_keyerror
# exercise: frdump
# replaces: frdump_solution
# why: reads the culprit's entry at the divergence unconditionally: a KeyError when the culprit has no entry
#   there (stuck outside any collective), instead of op and line None (issue 33)
@@
-            e = by_key[rank].get(key)  # None: the culprit never reached this collective
-            if e is None:
-                return {"rank": rank, "group": key[0], "seq": key[1], "op": None, "line": None}
+            e = by_key[rank][key]
