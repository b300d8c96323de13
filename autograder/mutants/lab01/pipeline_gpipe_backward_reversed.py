# mutant: pipeline_gpipe_backward_reversed
# exercise: pipeline
# replaces: pipeline_solution
# why: GPipe's backwards last micro-batch first (the order of many GPipe figures), not in the same order as
#      the forwards: gradients, loss and peak memory are unchanged, only the schedule's order differs
@@
-        return [("F", i) for i in range(m)] + [("B", i) for i in range(m)]
+        return [("F", i) for i in range(m)] + [("B", i) for i in reversed(range(m))]
