# mutant: zero1_one_group
# exercise: zero1
# replaces: zero1_solution
# why: merges the parameter groups into one (one flat buffer, so one group): the optimizer no longer keeps
#      the groups it was given (the biases' weight_decay 0.0 is lost, a scheduler sees one group)
@@
         self.buckets = []
+        self.param_groups = [{**self.param_groups[0], "params": [p for g in self.param_groups for p in g["params"]]}]
