# mutant: card_heartbeat_stale
# exercise: decide
# replaces: card_solution
# why: the fallback note quotes the collective timeout as the heartbeat deadline: a card number no
#   measurement backs
@@
-                   f"are caught first by a heartbeat watchdog after {heartbeat_s:.3f} s without a finished step "
+                   f"are caught first by a heartbeat watchdog after {timeout_s:.3f} s without a finished step "
