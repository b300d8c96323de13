# mutant: card_fallback_from_launch
# exercise: measure
# replaces: card_solution
# why: the card's fallback is the time from before launch (start-up, DDP init, 3 steps) to the report, not
#   from the kill (issue 11). The old test never checked the fallback number.
@@
-fallback_s = float(drill["detect_s"])
+fallback_s = float(drill["launch_to_report_s"])
