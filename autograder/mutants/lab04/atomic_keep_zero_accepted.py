# mutant: atomic_keep_zero_accepted
# exercise: atomic
# replaces: atomic_solution
# why: accepts keep=0 (the old reference's [:-0] kept everything) instead of refusing it (issue 11)
def durable_write(path: Path, data: bytes | memoryview) -> dict[str, Any]:
    """Write ``data`` to ``path`` through a Python file object, flush and fsync; return bytes and sha256."""
    ### BEGIN SOLUTION
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())  # data on disk before anything can point at it
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    ### END SOLUTION


def fsync_dir(path: Path) -> None:
    """Make the entries (names) of directory ``path`` durable."""
    ### BEGIN SOLUTION
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    ### END SOLUTION


def verify_checkpoint(d: Path, *, deep: bool = True) -> str | None:
    """None if ``d`` is a complete checkpoint (every file of its manifest: size and, if ``deep``, sha256),
    else why not. ``deep=False`` (sizes only) tells a finished save from an interrupted one: enough for
    retention, which should not re-read every old checkpoint at each save; the loader always checks deep."""
    ### BEGIN SOLUTION
    try:
        files = json.loads((d / MANIFEST).read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError) as exc:  # an interrupted or foreign save
        return f"no readable manifest ({type(exc).__name__}: {exc})"
    for name, meta in files.items():
        if not (d / name).is_file():
            return f"{name} is missing"
        size = (d / name).stat().st_size
        if size != meta["bytes"]:
            return f"{name} has {size} bytes, the manifest says {meta['bytes']} (truncated)"
        if deep and hashlib.sha256((d / name).read_bytes()).hexdigest() != meta["sha256"]:
            return f"{name} fails its sha256 check (corrupted)"
    return None
    ### END SOLUTION


def save_checkpoint(root: str | os.PathLike, step: int, parts: dict[str, Any], *, keep: int = 3) -> Path:
    """Publish ``parts`` (name -> picklable object) atomically and durably as ``root/step-<step:08d>``.

    Temp dir, fsynced files, manifest with sha256 last, fsync dir, rename, fsync root, atomic ``latest``; keep
    the newest ``keep`` complete checkpoints (only older complete ones are deleted). Returns the path.
    """
    ### BEGIN SOLUTION
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    final, tmp = root / f"step-{step:08d}", root / f".tmp-step-{step:08d}"

    def retire(d: Path) -> None:  # out of the step- namespace first: a crash mid-delete leaves only debris
        trash = root / f".trash-{d.name}"
        shutil.rmtree(trash, ignore_errors=True)  # debris of an earlier crashed delete would block the rename
        os.replace(d, trash)
        shutil.rmtree(trash)

    shutil.rmtree(tmp, ignore_errors=True)  # debris of an earlier crashed save of this step
    tmp.mkdir()
    files = {}
    for name, obj in parts.items():
        buf = io.BytesIO()
        torch.save(obj, buf)  # into memory: torch.save(obj, path) writes through C++ and never fsyncs
        files[f"{name}.pt"] = durable_write(tmp / f"{name}.pt", buf.getbuffer())
    # the manifest is the commit record: written last, it lists what a complete checkpoint holds
    durable_write(tmp / MANIFEST, json.dumps({"step": step, "files": files}, indent=1).encode())
    fsync_dir(tmp)  # the files' names, not just their data
    if final.exists():
        retire(final)
    os.replace(tmp, final)  # atomic: readers see no directory or the whole one
    fsync_dir(root)  # the new name survives a power loss
    durable_write(root / ".latest.tmp", final.name.encode())
    os.replace(root / ".latest.tmp", root / "latest")  # only ever names a published checkpoint
    fsync_dir(root)
    older = [d for d in sorted(root.glob("step-*")) if d.is_dir() and d.name < final.name]
    complete = [d for d in older if verify_checkpoint(d, deep=False) is None]
    for d in complete[: max(0, len(complete) - (keep - 1))]:
        retire(d)
    return final
    ### END SOLUTION


def load_checkpoint(root: str | os.PathLike, map_location: Any = "cpu") -> Loaded:
    """The newest ``root/step-*`` that verifies, as ``Loaded``; ``skipped`` maps each newer directory name to
    the reason it was skipped. FileNotFoundError (with the reasons) if none does."""
    ### BEGIN SOLUTION
    skipped: dict[str, str] = {}
    for d in sorted((d for d in Path(root).glob("step-*") if d.is_dir()), reverse=True):  # 8 digits sort
        if (why := verify_checkpoint(d)) is not None:
            skipped[d.name] = why
            continue
        files = json.loads((d / MANIFEST).read_text())["files"]
        # weights_only=False is acceptable only because we wrote these bytes and just verified their checksums
        parts = {n.removesuffix(".pt"): torch.load(d / n, map_location=map_location, weights_only=False)
                 for n in files}
        return Loaded(int(d.name.split("-")[1]), d, parts, skipped)
    raise FileNotFoundError(f"no complete checkpoint under {root}; skipped: {skipped or 'nothing found'}")
    ### END SOLUTION
