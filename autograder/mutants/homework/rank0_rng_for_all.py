# mutant: rank0_rng_for_all
# exercise: state
# replaces: fttrainer/state.py
# why: saves the RNG state once, in the shared part written by rank 0, and restores it on every rank: at
#      world 1 nothing shows, at world 2 rank 1 resumes with rank 0's generator and draws other dropout masks
@@
+        "rng": rng_state(),  # rank 0's - the only one that ends up on disk
     }
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
+    set_rng_state(shared["rng"])
