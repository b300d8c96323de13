# mutant: position_wraps_at_epoch_end
# exercise: elastic
# replaces: fttrainer/sampler.py
# why: the position is taken modulo the epoch: a state saved after the epoch's last step resumes the whole
#      epoch again (harmless in the trainer, which moves to the next epoch first; wrong for the sampler)
@@
-        self.consumed = int(state["consumed"])
+        self.consumed = int(state["consumed"]) % (self.steps_per_epoch * self.global_batch)
