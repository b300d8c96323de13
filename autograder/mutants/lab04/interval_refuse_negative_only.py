# mutant: interval_refuse_negative_only
# exercise: interval
# replaces: interval_solution
# why: inclusive vs strict: refuses negative inputs only ("non-positive" read as "negative"): a zero MTBF or
#      cost passes through
@@
-    if gpu_mtbf_s <= 0 or n_gpus <= 0:
+    if gpu_mtbf_s < 0 or n_gpus < 0:
@@
-    if cost_s <= 0 or mtbf_s <= 0:
+    if cost_s < 0 or mtbf_s < 0:
@@
-    if interval_s <= 0 or mtbf_s <= 0:
+    if interval_s < 0 or mtbf_s < 0:
