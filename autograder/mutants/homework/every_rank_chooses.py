# mutant: every_rank_chooses
# exercise: recovery
# replaces: fttrainer/trainer.py (package module: body appended; re-binds resume)
# why: every rank scans the checkpoint folder and picks the newest complete checkpoint on its own: right while
#      all ranks see the same listing, wrong on a shared filesystem where one rank's view lags (it resumes
#      another step, or starts over)


def resume(run):
    info = run.info
    path = latest_checkpoint(run.ckpt_root)
    if path is not None:
        shared, local = load_checkpoint(path, info.rank)
        check_dataset(shared["dataset"], run.data.meta)
        check_resume_config(shared["config"], run.cfg)
        run.step, run.epoch = restore_state(
            shared, local, run.model, run.optimizer, run.scheduler, run.sampler
        )
        run.resumed_from = run.step
    run.metrics.event(
        "start",
        boot={**(run.boot or {}), "loaded": time.time()},
        attempt=info.attempt,
        world_size=info.world_size,
        resumed_from=run.resumed_from,
        dataset=run.data.meta.to_dict(),
        config=run.cfg.to_dict(),
        time=time.time(),
    )
    return run.resumed_from
