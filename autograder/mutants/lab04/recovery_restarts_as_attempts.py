# mutant: recovery_restarts_as_attempts
# exercise: recovery
# replaces: recovery_solution
# why: max_restarts read as the number of attempts (one launch short): a single failure still recovers, two do
#      not (written from the release text alone)
@@
-    for attempt in range(max_restarts + 1):
+    for attempt in range(max(1, max_restarts)):
