# mutant: contract_trainable_only
# exercise: contract
# replaces: contract_solution
# why: compares only tensors that require grad: the sampler's (seed, epoch) state is never compared
@@
-    mine = fingerprint(tensors).to(course_dist.device())
+    mine = fingerprint([t for t in tensors if t.requires_grad]).to(course_dist.device())
