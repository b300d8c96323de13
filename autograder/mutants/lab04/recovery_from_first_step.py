# mutant: recovery_from_first_step
# exercise: recovery
# replaces: recovery_solution
# why: first vs last: measures recovery from the failed attempt's FIRST completed step instead of its last,
#   so the failed attempt's whole run counts as recovery time
@@
-        recovery.append(float(nxt["time"].min() - failed["time"].max()) if len(failed) else float("nan"))
+        recovery.append(float(nxt["time"].min() - failed["time"].min()) if len(failed) else float("nan"))
