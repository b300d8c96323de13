# mutant: state_no_numpy_rng
# exercise: state
# replaces: state_solution
# why: never restores numpy's RNG: the jitter differs after resume
def capture_state(tr: lab04.Trainer) -> dict[str, Any]:
    """Everything this rank's next training step depends on, as a snapshot (copies, not references).

    Includes model, optimizer, scheduler, step/epoch/consumed, the python, numpy, torch-CPU and (if available)
    CUDA RNG states, the config and its hash. The result must survive ``lab04.roundtrip`` (torch.save/load).
    """
    ### BEGIN SOLUTION
    # RNGs are per process, so per rank: every rank saves its own
    rng = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(),
           "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}
    state = {"model": tr.model.state_dict(), "optimizer": tr.optimizer.state_dict(),
             "scheduler": tr.scheduler.state_dict(), "rng": rng,
             "position": {"step": tr.step, "epoch": tr.epoch, "consumed": tr.consumed},
             "config": tr.cfg.to_dict(), "config_hash": tr.cfg.digest()}
    # state_dict() returns references to live tensors: copy, or the next optimizer step rewrites the snapshot
    return copy.deepcopy(state)
    ### END SOLUTION


def restore_state(tr: lab04.Trainer, state: dict[str, Any]) -> None:
    """Load ``state`` into the freshly built ``tr`` so that its next step is the one the saved run would take.

    Raises ValueError naming both hashes if ``state`` was captured under a different config. ``state`` itself
    must stay untouched: restoring it again later must give the same run.
    """
    ### BEGIN SOLUTION
    if state["config_hash"] != tr.cfg.digest():
        raise ValueError(f"checkpoint was written under config {state['config_hash']}, this run's config is "
                         f"{tr.cfg.digest()}: refusing to mix runs (start fresh or restore the old config)")
    # optimizer.load_state_dict keeps references to the tensors it is given and AdamW updates them in place:
    # without a copy, training the restored trainer would rewrite ``state``
    state = copy.deepcopy(state)
    tr.model.load_state_dict(state["model"])
    tr.optimizer.load_state_dict(state["optimizer"])  # moves the moments to the parameters' device
    tr.scheduler.load_state_dict(state["scheduler"])
    pos = state["position"]
    tr.step, tr.epoch, tr.consumed = pos["step"], pos["epoch"], pos["consumed"]
    rng = state["rng"]  # last: building the trainer above consumed randomness
    random.setstate(rng["python"])
    torch.set_rng_state(rng["torch"])
    if rng["cuda"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])
    ### END SOLUTION
