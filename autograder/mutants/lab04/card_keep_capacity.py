# mutant: card_keep_capacity
# exercise: card
# replaces: card_solution
# why: capacity as the storage of keep=3 checkpoints, not the bytes of one
@@
-        capacity=Limit(float(meas["bytes_per_rank"]), "bytes per rank per checkpoint", "keep=3 triples it"),
+        capacity=Limit(3.0 * meas["bytes_per_rank"], "bytes per rank per checkpoint", "keep=3 checkpoints"),
