# mutant: zero2_full_size_out
# exercise: zero2
# replaces: zero2_solution
# why: reduce-scatters into its slice of a full-size buffer: the chunk returned is a view that keeps the
#      whole buffer alive, so the bytes live after the reduction are DDP's (the full gradient), not a chunk
@@
-    out = flat.new_empty(chunk)
+    out = torch.empty_like(flat)[dist.get_rank() * chunk:(dist.get_rank() + 1) * chunk]  # my slice
