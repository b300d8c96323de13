# mutant: commit_without_fsync
# exercise: atomic
# replaces: fttrainer/checkpoint.py (package module: body appended; re-binds _commit, which save_checkpoint calls)
# why: the two-phase commit without a single fsync of the manifest or the directories: atomic under SIGKILL
#      (os.replace), but a power cut can bring back an empty manifest or undo the rename


def _commit(root, tmp, final, step, world_size, reports, keep_last):
    files = {}
    for r, rep in enumerate(reports):
        if not rep or rep.get("rank") != r or rank_file(r) not in rep.get("files", {}):
            raise RuntimeError(f"rank {r} did not report its file {rank_file(r)} (report: {rep!r})")
        files.update(rep["files"])
    missing = sorted(_required(world_size) - set(files))
    if len(reports) != world_size or missing:
        raise RuntimeError(f"{len(reports)} reports for world {world_size}; missing files {missing}")
    manifest = {"step": step, "world_size": world_size, "created": time.time(), "files": files}
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1))
    if final.exists():
        _retire(final)
    os.replace(tmp, final)
    pointer = root / ".latest.tmp"
    pointer.write_text(final.name)
    os.replace(pointer, root / "latest")
    prune(root, keep_last, newest=step)
