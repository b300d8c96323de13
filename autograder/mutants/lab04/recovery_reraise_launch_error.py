# mutant: recovery_reraise_launch_error
# exercise: recovery
# replaces: recovery_solution
# why: after the last allowed attempt re-raises the launcher's RankError instead of its own RuntimeError
@@
             failures.append(f"attempt {attempt}: {type(exc).__name__}: " + " | ".join(x.strip() for x in report))
+            if attempt == max_restarts:
+                raise  # the last failure, as the launcher reported it
