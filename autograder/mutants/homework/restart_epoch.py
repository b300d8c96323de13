# mutant: restart_epoch
# exercise: elastic
# replaces: fttrainer/sampler.py
# why: resumes the right epoch but from its beginning (what a plain DistributedSampler does after a restart):
#      samples trained before the checkpoint are trained again
@@
-        for key in ("size", "global_batch", "seed"):
-            if state[key] != getattr(self, key):
-                raise ValueError(
-                    f"cannot resume the sample stream: checkpoint has {key}={state[key]}, this run has "
-                    f"{getattr(self, key)} (exactly-once needs the same dataset size, global batch and seed)"
-                )
-        if state["consumed"] % self.global_batch:
-            raise ValueError(f"position {state['consumed']} is not a multiple of the global batch")
         self.epoch = int(state["epoch"])
-        self.consumed = int(state["consumed"])
+        self.consumed = 0
