# mutant: card_one_interval_fallback
# exercise: card
# replaces: card_solution
# why: fallback counts one interval: a corrupt newest checkpoint sends the loader one further back
@@
-        fallback=Limit(2 * every * meas["step_s"] + meas["recovery_s"], "s of work lost at worst",
+        fallback=Limit(every * meas["step_s"] + meas["recovery_s"], "s of work lost at worst",
