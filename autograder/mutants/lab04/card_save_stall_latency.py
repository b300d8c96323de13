# mutant: card_save_stall_latency
# exercise: card
# replaces: card_solution
# why: quotes the save stall as the latency (the card asks for the time until training runs again)
@@
-        latency=Limit(float(meas["recovery_s"]), "s from a rank's death to the first resumed step",
+        latency=Limit(float(meas["save_s"]), "s from a rank's death to the first resumed step",
