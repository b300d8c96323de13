# mutant: no_rng_in_checkpoint
# exercise: state
# replaces: fttrainer/state.py
# why: saves model, optimizer, scheduler, sampler and step but no RNG state (as torchtitan): a resumed run
#      with dropout draws other masks and drifts away from the uninterrupted one
@@
-    local = {"rng": rng_state(), "step": step}
-    return shared, local
+    return shared, {"step": step}
@@
-    if local is None and int(shared["world_size"]) == sampler.world_size:
-        raise ValueError(
-            f"rank {sampler.rank} has no saved state in a checkpoint of the same world size "
-            f"{sampler.world_size}: refusing to resume with a reseeded RNG"
-        )
@@
-    if local is not None:
-        set_rng_state(local["rng"])
-    else:
-        seed = int(shared["config"]["seed"]) * 1000 + int(shared["step"]) + sampler.rank
-        torch.manual_seed(seed)
-        random.seed(seed)
-        np.random.seed(seed % 2**32)
