# mutant: every_rank_chooses
# exercise: recovery
# replaces: fttrainer/trainer.py
# why: every rank scans the checkpoint folder and picks the newest complete checkpoint on its own: right while
#      all ranks see the same listing, wrong on a shared filesystem where one rank's view lags (it resumes
#      another step, or starts over)
@@
-    choice = latest_checkpoint(run.ckpt_root) if info.rank == 0 else None
-    path = broadcast_choice(None if choice is None else str(choice), info)
+    path = latest_checkpoint(run.ckpt_root)
@@
-        if shared["world_size"] != info.world_size:
-            log.warning(
-                "resuming a world-%d checkpoint at world %d: the sample stream continues exactly, RNG "
-                "streams of new ranks are reseeded",
-                shared["world_size"],
-                info.world_size,
-            )
-    boot = {**(run.boot or {}), "loaded": time.time()}
@@
-        boot=boot,
+        boot={**(run.boot or {}), "loaded": time.time()},
@@
-    if info.rank == 0:
-        log.info(
-            "%s; %d steps/epoch x %d epochs, accum %d, resume from %s",
-            run.data.meta.version,
-            run.sampler.steps_per_epoch,
-            run.cfg.epochs,
-            run.sampler.accum,
-            path,
-        )
