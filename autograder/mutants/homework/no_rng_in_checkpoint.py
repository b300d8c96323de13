# mutant: no_rng_in_checkpoint
# exercise: state
# replaces: fttrainer/state.py (package module: body appended; re-binds capture_state, restore_state)
# why: saves model, optimizer, scheduler, sampler and step but no RNG state (as torchtitan): a resumed run
#      with dropout draws other masks and drifts away from the uninterrupted one


def capture_state(model, optimizer, scheduler, sampler, step, epoch, cfg, meta, world_size):
    shared = {
        "model": _unwrap(model).state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "sampler": sampler.state_dict(),
        "step": step,
        "epoch": epoch,
        "config": cfg.to_dict(),
        "dataset": meta.to_dict(),
        "world_size": world_size,
    }
    return shared, {"step": step}


def restore_state(shared, local, model, optimizer, scheduler, sampler):
    _unwrap(model).load_state_dict(shared["model"])
    optimizer.load_state_dict(shared["optimizer"])
    scheduler.load_state_dict(shared["scheduler"])
    sampler.load_state_dict(shared["sampler"])
    return int(shared["step"]), int(shared["epoch"])
