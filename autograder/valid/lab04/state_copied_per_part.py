# valid: state_copied_per_part
# exercise: state
# replaces: state_solution
# why: the same complete state, copied part by part (tensors cloned, the rest deep-copied) instead of one
#      deepcopy of the whole dict, its keys in another order; restore copies what it loads the same way
def capture_state(tr: lab04.Trainer) -> dict[str, Any]:
    """Everything this rank's next training step depends on, as a snapshot (copies, not references)."""
    cuda = [s.clone() for s in torch.cuda.get_rng_state_all()] if torch.cuda.is_available() else None
    return {
        "position": {"step": tr.step, "epoch": tr.epoch, "consumed": tr.consumed},
        "config": tr.cfg.to_dict(),
        "config_hash": tr.cfg.digest(),
        "model": {k: v.detach().clone() for k, v in tr.model.state_dict().items()},
        "optimizer": copy.deepcopy(tr.optimizer.state_dict()),
        "scheduler": copy.deepcopy(tr.scheduler.state_dict()),
        "rng": {"python": random.getstate(), "numpy": copy.deepcopy(np.random.get_state()),
                "torch": torch.get_rng_state().clone(), "cuda": cuda},
    }


def restore_state(tr: lab04.Trainer, state: dict[str, Any]) -> None:
    """Load ``state`` into the freshly built ``tr`` so that its next step is the one the saved run would take."""
    mine, theirs = tr.cfg.digest(), state["config_hash"]
    if mine != theirs:
        raise ValueError(f"checkpoint was written under config {theirs}, this run's config is {mine}: "
                         "refusing to mix runs")
    tr.model.load_state_dict({k: v.clone() for k, v in state["model"].items()})
    tr.optimizer.load_state_dict(copy.deepcopy(state["optimizer"]))
    tr.scheduler.load_state_dict(copy.deepcopy(state["scheduler"]))
    tr.step = state["position"]["step"]
    tr.epoch = state["position"]["epoch"]
    tr.consumed = state["position"]["consumed"]
    rng = state["rng"]
    random.setstate(rng["python"])
    np.random.set_state(rng["numpy"])
    torch.set_rng_state(rng["torch"].clone())
    if rng["cuda"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])
