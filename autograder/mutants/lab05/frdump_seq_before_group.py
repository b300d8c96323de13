# mutant: frdump_seq_before_group
# exercise: frdump
# replaces: frdump_solution
# why: walks the keys by seq id across groups: the DDP hang's side group (the logged loss, seq 1) comes before
#   DDP's bucket all-reduce on the default group, where the culprit made no call
@@
-    keys = sorted(set().union(*by_key.values()), key=lambda k: (k[0] != "0", k[0], k[1]))
+    keys = sorted(set().union(*by_key.values()), key=lambda k: (k[1], k[0]))
