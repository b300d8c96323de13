# mutant: pipeline_warmup_unclamped
# exercise: pipeline
# replaces: pipeline_solution
# why: warm-up of p - s - 1 forwards even when fewer micro-batches exist
@@
-    warmup = min(p - stage - 1, m)  # later stages start their backwards sooner
+    warmup = p - stage - 1  # later stages start their backwards sooner
