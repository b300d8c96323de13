# mutant: zero1_load_keeps_lr
# exercise: zero1
# replaces: zero1_solution
# why: load_state_dict loads the wrapped optimizer's state but not the hyperparameters back into the
#      wrapper's param_groups: the next sync_groups puts the initial lr back, so the resumed step 3 differs
@@
         self.optimizer = optimizer_cls(lab03.inner_groups(self.param_groups, self.buckets), **kwargs)
         ### END SOLUTION
+
+    def load_state_dict(self, state_dict) -> None:  # noqa: ANN001
+        self.optimizer.load_state_dict(state_dict)  # my shard's moments
