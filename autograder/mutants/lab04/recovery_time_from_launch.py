# mutant: recovery_time_from_launch
# exercise: recovery
# replaces: recovery_solution
# why: recovery time = wall time of the relaunch, not read from progress.log (issue 11)
@@
+    relaunch_s = []
     for attempt in range(max_restarts + 1):
+        t_launch = time.time()
@@
+            relaunch_s.append(time.time() - t_launch)
             break
@@
-        recovery.append(float(nxt["time"].min() - failed["time"].max()) if len(failed) else float("nan"))
+    recovery = relaunch_s[-1:] if attempt else []
