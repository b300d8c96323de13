# mutant: memory_grads_at_param_bytes
# exercise: memory
# replaces: memory_solution
# why: written from the release text alone (issue 34; it passed every visible test before): a gradient costs
#      what its parameter costs (grad_bytes ignored): right whenever param_bytes == grad_bytes, as in fp32
#      AdamW and the ZeRO paper's 2 + 2
@@
-    grads = local * grad_bytes / (dp if zero >= 2 else 1)
+    grads = local * param_bytes / (dp if zero >= 2 else 1)
