# mutant: card_fallback_heartbeat
# exercise: decide
# replaces: card_solution
# why: the fallback value is the heartbeat deadline, not the collective timeout the unit names: a card field
#   the measurement (timeout_s) contradicts
@@
-    fallback=Limit(float(timeout_s), "s collective timeout",
+    fallback=Limit(float(heartbeat_s), "s collective timeout",
