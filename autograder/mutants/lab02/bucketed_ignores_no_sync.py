# mutant: bucketed_ignores_no_sync
# exercise: bucketed
# replaces: bucketed_solution
# why: no_sync() sets a flag the hook never reads: collectives run during accumulation
@@
-        if not self._sync:
-            return  # no_sync(): accumulate locally, no collective
