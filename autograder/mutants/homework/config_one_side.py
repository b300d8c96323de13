# mutant: config_one_side
# exercise: recovery
# replaces: fttrainer/config.py
# why: the refusal names each differing field with the checkpoint's value only, not the run's
@@
-        f"{name}: checkpoint {saved.get(name)!r}, now {getattr(current, name)!r}"
+        f"{name}: checkpoint {saved.get(name)!r}"
