# mutant: ckpt_common_keys_only
# exercise: ckpt
# replaces: ckpt_solution
# why: compares shapes only of the tensors both sides have: a missing or extra tensor goes unnoticed
@@
-    for key in sorted(set(in_ckpt) | set(mine)):
+    for key in sorted(set(in_ckpt) & set(mine)):
