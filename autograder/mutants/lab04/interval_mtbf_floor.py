# mutant: interval_mtbf_floor
# exercise: interval
# replaces: interval_solution
# why: type / rounding: floor division, exact only when the GPU MTBF is a multiple of the GPU count (8 h over
#   8 GPUs), wrong for 10 s over 4 GPUs (2.0 instead of 2.5)
@@
-    return gpu_mtbf_s / n_gpus  # failure rates add: n independent parts fail n times as often
+    return gpu_mtbf_s // n_gpus
