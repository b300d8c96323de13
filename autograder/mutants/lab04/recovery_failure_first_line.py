# mutant: recovery_failure_first_line
# exercise: recovery
# replaces: recovery_solution
# why: keeps only the first line of the launcher's message (the old reference): after a timeout that line
#      says "launch timed out" and drops the report of which collective each rank waits in (issue 33)
@@
-            report = str(exc).split("\n---")[0].splitlines()  # the report, without stacks and tracebacks
+            report = str(exc).splitlines()[:1]
