# mutant: card_fallback_in_ms
# exercise: decide
# replaces: card_solution
# why: the fallback written in milliseconds (unit changed to match) while the drill measured seconds
@@
-    fallback=Limit(float(drill["detect_s"]), "s until a dead peer is named",
+    fallback=Limit(1e3 * float(drill["detect_s"]), "ms until a dead peer is named",
