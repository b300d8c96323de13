# mutant: card_ddp_numbers
# exercise: ckpt
# replaces: card_solution
# why: the card quotes FSDP2's latency with DDP's bytes: inconsistent with every measured configuration
@@
-        cost=Limit(float(row["bytes_per_step"]), "bytes moved per step per rank",
-                   "FSDP2 per block: (1.5 - 0.5 x root share) x DDP's, the root not resharded (torch default)"),
+        cost=Limit(float(timing_tbl.iloc[0]["bytes_per_step"]) / 2, "bytes per step per rank", "DDP's"),
