# mutant: pipeline_no_warmup
# exercise: pipeline
# replaces: pipeline_solution
# why: 1F1B without warm-up forwards: every stage alternates F, B from the start (no pipelining)
@@
-    warmup = min(p - stage - 1, m)  # later stages start their backwards sooner
+    warmup = 0
