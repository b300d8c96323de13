# mutant: sigterm_flag_unused
# exercise: recovery
# replaces: fttrainer/trainer.py
# why: every rank agrees on the SIGTERM flag but the loop never acts on it: no checkpoint of the last step, the
#      job trains on until torchrun's grace runs out (or the epochs do)
@@
-            if stop[0]:
-                stopped = "sigterm"
-            elif cfg.max_steps and run.step >= cfg.max_steps:
+            if cfg.max_steps and run.step >= cfg.max_steps:
