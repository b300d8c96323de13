# mutant: recovery_lost_off_by_one
# exercise: recovery
# replaces: recovery_solution
# why: lost work counted from the new attempt's first step, not the step it resumed from (one step short)
def train_job(cfg: lab04.Config, root: str, steps: int, every: int, attempt: int = 0) -> dict[str, Any]:
    """One rank of one attempt: resume from the newest simple checkpoint in ``root``, train to ``steps``,
    saving every ``every`` steps and logging progress (rank 0)."""
    ### BEGIN SOLUTION
    tr = lab04.Trainer(cfg)
    start = lab04.simple_load(root, tr) or 0  # None on the first attempt: start from scratch
    with open(Path(root) / "progress.log", "a") as log:  # every rank opens it, rank 0 writes
        while tr.step < steps:
            course_dist.step(tr.step)  # the fault plan fires here
            tr.train_step()
            if tr.rank == 0:
                log.write(f"{attempt} {tr.step} {time.time()}\n")
                log.flush()
            if tr.step % every == 0:
                lab04.simple_save(root, tr)
    return {"start_step": start, "params": lab04.params_vector(tr.model)}
    ### END SOLUTION


def supervise(cfg: lab04.Config, root: str, steps: int, every: int, *, world_size: int = 2,
              faults: list[Fault] | None = None, max_restarts: int = 2,
              timeout: float = 60.0) -> RecoveryReport:
    """Run ``train_job`` on ``world_size`` ranks, relaunching after a failure (up to ``max_restarts`` times).
    Returns a ``RecoveryReport`` with per-restart recovery time and lost steps."""
    ### BEGIN SOLUTION
    t0 = time.time()
    failures: list[str] = []
    for attempt in range(max_restarts + 1):
        try:
            results = course_dist.launch(train_job, world_size, args=(cfg, root, steps, every),
                                         kwargs={"attempt": attempt}, faults=faults, timeout=timeout,
                                         env={"TORCHELASTIC_RESTART_COUNT": str(attempt)}, stream=False)
            break
        except (RankError, LaunchTimeout) as exc:
            failures.append(f"attempt {attempt}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    else:
        raise RuntimeError(f"gave up after {max_restarts} restarts: {failures}")
    prog = lab04.read_progress(root)
    recovery, lost = [], []
    for a in range(attempt):
        failed, nxt = prog[prog["attempt"] == a], prog[prog["attempt"] == a + 1]
        lost.append(int(failed["step"].max()) - int(nxt["step"].min()) if len(failed) else 0)
        recovery.append(float(nxt["time"].min() - failed["time"].max()) if len(failed) else float("nan"))
    return RecoveryReport(results, attempt + 1, failures, recovery, lost, time.time() - t0)
    ### END SOLUTION
