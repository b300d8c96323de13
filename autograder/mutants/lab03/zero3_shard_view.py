# mutant: zero3_shard_view
# exercise: zero3
# replaces: zero3_solution
# why: keeps this rank's shard as a view of the flat buffer (chunk, no .clone()): freeing the buffer frees the
#      shard, and the optimizer would step freed memory (a SIGSEGV before the guard; now the harness names it)
@@
-        self.shard = self.full[self.rank * self.chunk:(self.rank + 1) * self.chunk].clone()
+        self.shard = self.full.chunk(self.world)[self.rank]  # my chunk of the flat parameters
