# valid: dcp_barrier_first_rename
# exercise: dcp
# replaces: dcp_solution
# why: an extra barrier before the commit (redundant with DCP: rank 0's future ends after .metadata, which the
#      coordinator writes only once every rank's write is in), Path.rename and a hand-written fsync instead of
#      os.replace and fsync_dir; latest found by sorting the zero-padded names
def _sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish_dcp(future: Any, staging: Path, final: Path) -> Path:
    """Called on every rank after ``dcp.async_save`` into ``staging`` returned ``future``."""
    future.result()
    dist.barrier()  # every rank has its future back
    if dist.get_rank() == 0:
        _sync_dir(staging)
        staging.rename(final)
        _sync_dir(final.parent)
    dist.barrier()
    return final


def latest_complete(root: str | os.PathLike) -> Path | None:
    """The newest published ``step-*`` directory of ``root`` holding ``.metadata``; None if there is none."""
    if not os.path.isdir(root):
        return None
    names = sorted(n for n in os.listdir(root) if n.startswith("step-"))
    for name in reversed(names):
        if os.path.isfile(os.path.join(root, name, ".metadata")):
            return Path(root) / name
    return None
