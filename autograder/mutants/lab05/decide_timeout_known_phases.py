# mutant: decide_timeout_known_phases
# exercise: decide
# replaces: decide_solution
# why: only the four phases the text names: a measured phase under another name (a restore) is ignored
@@
-    return margin * max(max(waits) for waits in phase_s.values())
+    return margin * max(max(v) for k, v in phase_s.items() if k in ("step", "warmup", "checkpoint", "eval"))
