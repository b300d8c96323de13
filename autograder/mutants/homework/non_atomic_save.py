# mutant: non_atomic_save
# exercise: atomic
# replaces: fttrainer/checkpoint.py (package module: body appended; re-binds save_checkpoint)
# why: torch.save straight into the final step-N folder, `latest` moved first, manifest written but nothing
#      fsynced or renamed: a kill mid-write leaves a half-written checkpoint under its final name


def save_checkpoint(root, step, shared, local, rank, world_size, keep_last=3, gather=None):
    def sync():
        if gather is not None:
            gather(None)

    root = Path(root)
    final = step_dir(root, step)
    if rank == 0:
        final.mkdir(parents=True, exist_ok=True)
        (root / "latest").write_text(final.name)
    sync()
    if rank == 0:
        torch.save(shared, final / "shared.pt")
    torch.save(local, final / f"rank-{rank:05d}.pt")
    sync()
    if rank == 0:
        files = sorted(p.name for p in final.iterdir() if p.name != MANIFEST)
        manifest = {
            "step": step,
            "world_size": world_size,
            "created": time.time(),
            "files": {n: {"sha256": _sha256(final / n), "bytes": (final / n).stat().st_size} for n in files},
        }
        (final / MANIFEST).write_text(json.dumps(manifest))
        prune(root, keep_last)
    sync()
    return final
