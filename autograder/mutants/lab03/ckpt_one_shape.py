# mutant: ckpt_one_shape
# exercise: ckpt
# replaces: ckpt_solution
# why: the ValueError names the tensor and only the model's shape, not the checkpoint's
@@
-            raise ValueError(f"checkpoint {path} is of a different model: {key} has shape {in_ckpt.get(key)} "
-                             f"there and {mine.get(key)} here")
+            raise ValueError(f"checkpoint {path} is of a different model: {key} has shape {mine.get(key)} here")
