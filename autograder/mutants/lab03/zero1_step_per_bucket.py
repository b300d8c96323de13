# mutant: zero1_step_per_bucket
# exercise: zero1
# replaces: zero1_solution
# why: steps the wrapped optimizer inside the bucket loop: right with one dtype (the lab model), but with an
#      fp32 and a bf16 bucket the fp32 pieces are stepped twice per step
@@
-        del flat, grad_shard
-        self.sync_groups()
-        self.optimizer.step()
+            self.sync_groups()
+            self.optimizer.step()  # step what was just reduced
+        del flat, grad_shard
