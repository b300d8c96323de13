# mutant: non_atomic_save
# exercise: atomic
# replaces: fttrainer/checkpoint.py
# why: torch.save straight into the final step-N folder, `latest` moved first, manifest written but nothing
#      fsynced or renamed: a kill mid-write leaves a half-written checkpoint under its final name
@@
-    if keep_last < 1:
-        raise ValueError(f"keep_last must be >= 1, got {keep_last}")
-    gather = gather or _gather_local
+    def sync():
+        if gather is not None:
+            gather(None)
+
     root = Path(root)
-    tmp = root / f".tmp-step-{step:08d}"
@@
-        if shared is None:
-            raise ValueError("rank 0 must pass the shared state")
-        root.mkdir(parents=True, exist_ok=True)
-        if tmp.exists():  # debris of an earlier attempt killed mid-write
-            shutil.rmtree(tmp)
-        tmp.mkdir()
-    gather(None)  # the staging folder exists before anyone writes into it
-    # phase 1 (prepare): my files, durable, and their digests (rank 0's small rank file is fsynced with the
-    # manifest, in one batch before the publishing rename: one journal commit less)
-    report = {rank_file(rank): _write_durable(tmp / rank_file(rank), local, sync=rank != 0)}
-    if rank == 0:
-        report["shared.pt"] = _write_durable(tmp / "shared.pt", shared)
-    reports = gather({"rank": rank, "files": report})
-    # phase 2 (commit): rank 0 publishes only a checkpoint that holds every rank's file
-    outcome = None
+        final.mkdir(parents=True, exist_ok=True)
+        (root / "latest").write_text(final.name)
+    sync()
     if rank == 0:
-        try:
-            _commit(root, tmp, final, step, world_size, reports, keep_last)
-        except Exception as e:  # every rank must learn it: nobody may go on believing step N is saved
-            outcome = f"{type(e).__name__}: {e}"
-    outcomes = gather(outcome)
-    if outcomes[0] is not None:
-        raise RuntimeError(
-            f"checkpoint of step {step} was not published: rank 0 failed to commit: {outcomes[0]}"
-        )
+        torch.save(shared, final / "shared.pt")
+    torch.save(local, final / f"rank-{rank:05d}.pt")
+    sync()
+    if rank == 0:
+        files = sorted(p.name for p in final.iterdir() if p.name != MANIFEST)
+        manifest = {
+            "step": step,
+            "world_size": world_size,
+            "created": time.time(),
+            "files": {n: {"sha256": _sha256(final / n), "bytes": (final / n).stat().st_size} for n in files},
+        }
+        (final / MANIFEST).write_text(json.dumps(manifest))
+        prune(root, keep_last)
+    sync()
