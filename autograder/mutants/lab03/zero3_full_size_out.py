# mutant: zero3_full_size_out
# exercise: zero3
# replaces: zero3_solution
# why: reduce-scatters into its slice of a unit-size buffer: the shard's gradient is a view that keeps the
#      unit's whole gradient alive until the optimizer step, so by the end of the backward every unit's is
@@
-        out = flat.new_empty(self.chunk)
+        out = torch.empty_like(flat)[self.rank * self.chunk:(self.rank + 1) * self.chunk]  # my slice
