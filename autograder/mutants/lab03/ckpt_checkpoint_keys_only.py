# mutant: ckpt_checkpoint_keys_only
# exercise: ckpt
# replaces: ckpt_solution
# why: compares in one direction only, the checkpoint's tensors against the model: a model with one block
#      more (tensors the checkpoint lacks) reaches dcp.load, which fails inside DCP instead of a ValueError
@@
-    for key in sorted(set(in_ckpt) | set(mine)):
+    for key in sorted(in_ckpt):
