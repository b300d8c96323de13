# mutant: no_sync_first_only
# exercise: ddp
# replaces: fttrainer/ddp.py
# why: only the first micro-batch runs inside no_sync: right at accum 2, but accum 3 all-reduces twice per step
#      (same numbers: the second all-reduce averages an already averaged sum)
@@
-            last = i == accum - 1
+            last = i > 0
