# mutant: throughput_from_compute
# exercise: metrics
# replaces: fttrainer/trainer.py
# why: samples_per_s divides by the local compute time, not the step time (wait and sync left out)
@@
-        "samples_per_s": n / step_s,
+        "samples_per_s": n / stats.compute_s,
