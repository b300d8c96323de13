# mutant: recovery_fault_every_attempt
# exercise: recovery
# replaces: recovery_solution
# why: does not pass the attempt number: the planned fault fires again on every attempt
@@
-                                         env={"TORCHELASTIC_RESTART_COUNT": str(attempt)}, stream=False)
+                                         stream=False)
