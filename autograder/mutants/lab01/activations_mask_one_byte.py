# mutant: activations_mask_one_byte
# exercise: activations
# replaces: activations_solution
# why: dropout masks always one byte, whatever mask_bytes says
@@
-    return s * b * h * (16 * value_bytes + 2 * mask_bytes) + a * s * s * b * (2 * value_bytes + mask_bytes)
+    return s * b * h * (16 * value_bytes + 2) + a * s * s * b * (2 * value_bytes + 1)
