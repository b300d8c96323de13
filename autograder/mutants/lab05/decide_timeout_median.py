# mutant: decide_timeout_median
# exercise: decide
# replaces: decide_solution
# why: heartbeat deadline from the typical (median) step, not the tail: healthy slow steps trip the watchdog
@@
-    return margin * max(step_s)
+    return margin * sorted(step_s)[len(step_s) // 2]
