# mutant: bucketed_accum_overwrites
# exercise: bucketed
# replaces: bucketed_solution
# why: the old reference (issue 11): forward never writes a pending backward's averages back, so a second
#   backward without no_sync launches nothing (counters used up) and finish copies the first micro-batch's
#   average over .grad: Linear(1,1) toy gives 1.5 where torch DDP gives 13.0. The old tests passed it.
@@
-        if self._work:
-            # a backward since the last finish (accumulation without no_sync): write its averages back now, so
-            # this micro-batch's backward accumulates onto them and reduces again - what torch DDP does
-            self.finish_gradient_synchronization()
