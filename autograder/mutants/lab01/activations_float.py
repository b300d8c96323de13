# mutant: activations_float
# exercise: activations
# replaces: activations_solution
# why: the Playbook's s*b*h*(34 + 5*a*s/h) as written returns a float
@@
-    return s * b * h * (16 * value_bytes + 2 * mask_bytes) + a * s * s * b * (2 * value_bytes + mask_bytes)
+    return s * b * h * (16 * value_bytes + 2 * mask_bytes + (2 * value_bytes + mask_bytes) * a * s / h)
