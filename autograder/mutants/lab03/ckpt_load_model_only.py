# mutant: ckpt_load_model_only
# exercise: ckpt
# replaces: ckpt_solution
# why: loads only the model's tensors: the optimizer resumes with fresh AdamW moments (a missing tensor)
@@
-    dcp.load(state, checkpoint_id=path)  # in place, into this world size's shards
+    dcp.load({"model": state["model"]}, checkpoint_id=path)
