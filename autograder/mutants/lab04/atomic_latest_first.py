# mutant: atomic_latest_first
# exercise: atomic
# replaces: atomic_solution
# why: moves the latest pointer before the checkpoint it names is published
def save_checkpoint(root: str | os.PathLike, step: int, parts: dict[str, Any], *, keep: int = 3) -> Path:
    """Publish ``parts`` (name -> picklable object) atomically as ``root/step-<step:08d>``; return that path.

    Protocol: temp dir, fsynced files, manifest with sha256 last, fsync dir, rename, fsync root, atomic
    ``latest``, keep the newest ``keep``.
    """
    ### BEGIN SOLUTION
    def durable(path: Path, data: bytes | memoryview) -> dict:
        with open(path, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())  # data on disk before anything can point at it
        return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}

    def fsync_dir(path: Path) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)  # makes the directory's entries (new names) durable
        finally:
            os.close(fd)

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    final, tmp = root / f"step-{step:08d}", root / f".tmp-step-{step:08d}"
    if tmp.exists():
        shutil.rmtree(tmp)  # debris of an earlier crashed save of this step
    tmp.mkdir()
    files = {}
    for name, obj in parts.items():
        buf = io.BytesIO()
        torch.save(obj, buf)
        files[f"{name}.pt"] = durable(tmp / f"{name}.pt", buf.getbuffer())
    # the manifest is the commit record: written last, it lists what a complete checkpoint holds
    durable(tmp / MANIFEST, json.dumps({"step": step, "files": files}, indent=1).encode())
    fsync_dir(tmp)
    if final.exists():  # re-saving a step after a restart: retire the old one out of the step- namespace
        os.replace(final, root / f".trash-{final.name}")
        shutil.rmtree(root / f".trash-{final.name}")
    durable(root / ".latest.tmp", final.name.encode())
    os.replace(root / ".latest.tmp", root / "latest")
    fsync_dir(root)
    os.replace(tmp, final)
    fsync_dir(root)
    published = sorted(d for d in root.iterdir() if d.is_dir() and d.name.startswith("step-"))
    for old in published[:-keep]:
        trash = root / f".trash-{old.name}"
        os.replace(old, trash)  # a crash mid-delete leaves debris, never a half-deleted step directory
        shutil.rmtree(trash)
    return final
    ### END SOLUTION


def load_checkpoint(root: str | os.PathLike, map_location: Any = "cpu") -> Loaded:
    """The newest ``root/step-*`` whose manifest verifies (sizes and sha256) as ``Loaded``; ``skipped`` maps
    each newer directory name to the reason it was skipped. FileNotFoundError (with reasons) if none does."""
    ### BEGIN SOLUTION
    def problem(d: Path) -> str | None:
        try:
            files = json.loads((d / MANIFEST).read_text())["files"]
        except FileNotFoundError:
            return "no manifest (an interrupted or foreign save)"
        except (ValueError, KeyError, TypeError) as exc:
            return f"unreadable manifest ({exc})"
        for name, meta in files.items():
            p = d / name
            if not p.is_file():
                return f"{name} is missing"
            data = p.read_bytes()
            if len(data) != meta["bytes"]:
                return f"{name} has {len(data)} bytes, the manifest says {meta['bytes']} (truncated)"
            if hashlib.sha256(data).hexdigest() != meta["sha256"]:
                return f"{name} fails its sha256 check (corrupted)"
        return None

    root = Path(root)
    skipped: dict[str, str] = {}
    found = [d for d in root.iterdir() if d.is_dir() and d.name.startswith("step-")] if root.is_dir() else []
    candidates = sorted(found, reverse=True)  # newest first: 8-digit step numbers sort as strings
    for d in candidates:
        why = problem(d)
        if why is not None:
            skipped[d.name] = why
            continue
        files = json.loads((d / MANIFEST).read_text())["files"]
        # weights_only=False is acceptable only because we wrote these bytes and just verified their checksums
        parts = {n.removesuffix(".pt"): torch.load(d / n, map_location=map_location, weights_only=False)
                 for n in files}
        return Loaded(int(d.name.split("-")[1]), d, parts, skipped)
    raise FileNotFoundError(f"no complete checkpoint under {root}; skipped: {skipped or 'nothing found'}")
    ### END SOLUTION
