# mutant: recovery_catch_rankerror_only
# exercise: recovery
# replaces: recovery_solution
# why: restarts after a rank died but not after a hang: the launcher's LaunchTimeout escapes supervise
#      (written from the release text alone; no visible case timed out before issue 33)
@@
-        except (RankError, LaunchTimeout) as exc:
+        except RankError as exc:
