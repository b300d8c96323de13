# mutant: stretch_mixed_reduce_fp32_always
# exercise: mixed
# replaces: mixed_solution
# why: ignores reduce_dtype and always reduces in fp32: a bf16 reduction is then bitwise the fp32 one
@@
-        g = p.grad.to(reduce_dtype)
+        g = p.grad.float()
