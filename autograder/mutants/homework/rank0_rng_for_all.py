# mutant: rank0_rng_for_all
# exercise: state
# replaces: fttrainer/state.py (package module: body appended; re-binds capture_state, restore_state)
# why: saves the RNG state once, in the shared part written by rank 0, and restores it on every rank: at
#      world 1 nothing shows, at world 2 rank 1 resumes with rank 0's generator and draws other dropout masks


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
        "rng": rng_state(),  # rank 0's - the only one that ends up on disk
    }
    return shared, {"step": step}


def restore_state(shared, local, model, optimizer, scheduler, sampler):
    _unwrap(model).load_state_dict(shared["model"])
    optimizer.load_state_dict(shared["optimizer"])
    scheduler.load_state_dict(shared["scheduler"])
    sampler.load_state_dict(shared["sampler"])
    set_rng_state(shared["rng"])
    return int(shared["step"]), int(shared["epoch"])
