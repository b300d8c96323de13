# mutant: memory_optim_bytes_fixed
# exercise: memory
# replaces: memory_solution
# why: the ZeRO paper's K = 12 bytes of optimizer state hard-coded, optim_bytes ignored: the paper's numbers
#      hold, fp32 AdamW (8 bytes: exp_avg and exp_avg_sq) does not
@@
-    optimizer = local * optim_bytes / (dp if zero >= 1 else 1)
+    optimizer = local * 12 / (dp if zero >= 1 else 1)
