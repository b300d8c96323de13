# mutant: distributed_no_commit
# exercise: distributed
# replaces: distributed_solution
# why: rank 0 publishes its own files at once, without waiting for the other ranks' reports
def save_distributed(root: str | os.PathLike, step: int, parts: dict[str, Any], *,
                     shared: dict[str, Any] | None = None, keep: int = 3) -> Path:
    """Called on every rank: publish every rank's ``parts`` (and ``shared``, written by rank 0) as one
    checkpoint ``root/step-<step:08d>`` with a two-phase commit. Returns the published path on every rank."""
    ### BEGIN SOLUTION
    rank, world = course_dist.rank(), course_dist.world_size()
    root = Path(root)
    final, tmp = root / f"step-{step:08d}", root / f".tmp-step-{step:08d}"
    if rank == 0:
        root.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
    dist.barrier()  # the staging directory exists before anyone writes into it
    mine = {f"rank{rank:02d}-{name}.pt": obj for name, obj in parts.items()}
    if rank == 0:  # replicated state: one writer, or the ranks race on one path
        mine |= {f"shared-{name}.pt": obj for name, obj in (shared or {}).items()}
    report = {}
    for name, obj in mine.items():
        buf = io.BytesIO()
        torch.save(obj, buf)
        report[name] = durable_write(tmp / name, buf.getbuffer())
    if rank == 0:
        files = dict(report)
        manifest = {"step": step, "world_size": world, "files": files}
        durable_write(tmp / MANIFEST, json.dumps(manifest).encode())
        fsync_dir(tmp)
        if final.exists():
            shutil.rmtree(root / f".trash-{final.name}", ignore_errors=True)
            os.replace(final, root / f".trash-{final.name}")
            shutil.rmtree(root / f".trash-{final.name}")
        os.replace(tmp, final)  # phase 2: commit
        fsync_dir(root)
        durable_write(root / ".latest.tmp", final.name.encode())
        os.replace(root / ".latest.tmp", root / "latest")
        fsync_dir(root)
        older = [d for d in sorted(root.glob("step-*")) if d.is_dir() and d.name < final.name]
        complete = [d for d in older if verify_checkpoint(d, deep=False) is None]
        for d in complete[: max(0, len(complete) - (keep - 1))]:
            shutil.rmtree(root / f".trash-{d.name}", ignore_errors=True)
            os.replace(d, root / f".trash-{d.name}")
            shutil.rmtree(root / f".trash-{d.name}")
    dist.barrier()  # nobody returns (and maybe trains on, or exits) before the commit
    return final
    ### END SOLUTION
