# mutant: interval_mtbf_ignores_gpus
# exercise: interval
# replaces: interval_solution
# why: the job fails as often as one GPU: the failure rate does not grow with the number of GPUs
@@
-    return gpu_mtbf_s / n_gpus  # failure rates add: n independent parts fail n times as often
+    return gpu_mtbf_s
