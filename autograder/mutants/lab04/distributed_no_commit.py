# mutant: distributed_no_commit
# exercise: distributed
# replaces: distributed_solution
# why: rank 0 publishes its own files at once, without waiting for the other ranks' reports
def save_distributed(root: str | os.PathLike, step: int, parts: dict[str, Any], *,
                     shared: dict[str, Any] | None = None, keep: int = 3) -> Path:
    """Called on every rank: publish every rank's ``parts`` (and rank 0's ``shared``) as one checkpoint
    ``root/step-<step:08d>`` with a two-phase commit. Returns the published path on every rank."""
    ### BEGIN SOLUTION
    def durable(path: Path, data: bytes | memoryview) -> dict:
        with open(path, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}

    def fsync_dir(path: Path) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    rank, world = course_dist.rank(), course_dist.world_size()
    root = Path(root)
    final, tmp = root / f"step-{step:08d}", root / f".tmp-step-{step:08d}"
    if rank == 0:
        root.mkdir(parents=True, exist_ok=True)
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
    dist.barrier()  # the staging directory exists before anyone writes into it
    mine = {f"rank{rank:02d}-{name}.pt": obj for name, obj in parts.items()}
    mine |= {f"shared-{name}.pt": obj for name, obj in (shared or {}).items()}
    report = {}
    for name, obj in mine.items():
        buf = io.BytesIO()
        torch.save(obj, buf)
        report[name] = durable(tmp / name, buf.getbuffer())
    if rank == 0:
        files = dict(report)
        manifest = {"step": step, "world_size": world, "files": files}
        durable(tmp / MANIFEST, json.dumps(manifest, indent=1).encode())
        fsync_dir(tmp)
        if final.exists():
            os.replace(final, root / f".trash-{final.name}")
            shutil.rmtree(root / f".trash-{final.name}")
        os.replace(tmp, final)  # phase 2: commit
        fsync_dir(root)
        durable(root / ".latest.tmp", final.name.encode())
        os.replace(root / ".latest.tmp", root / "latest")
        fsync_dir(root)
        for old in sorted(d for d in root.iterdir() if d.is_dir() and d.name.startswith("step-"))[:-keep]:
            os.replace(old, root / f".trash-{old.name}")
            shutil.rmtree(root / f".trash-{old.name}")
    dist.barrier()  # nobody returns (and maybe trains on, or exits) before the commit
    return final
    ### END SOLUTION
