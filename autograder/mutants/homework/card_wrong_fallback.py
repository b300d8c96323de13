# mutant: card_wrong_fallback
# exercise: card
# replaces: card_solution
# why: the card's fallback says one restart while the drills ran torchrun with --max-restarts 3
<<<<<<< find
### BEGIN SOLUTION
=======
>>>>>>> replace
<<<<<<< find
    latency=Limit(measured["latency"], "s", "SIGKILL to the first resumed step at world 2 (torchrun notices the "
                  "death and restarts both workers, Python + torch import, rendezvous, load); plus up to "
                  "ckpt_every steps of lost work redone"),
    cost=Limit(measured["cost"], "%", "checkpoint time / training time at the drill's interval (8 steps); the "
               "default interval of 50 steps keeps it far under 5% (bench/results/homework.md)"),
    capacity=Limit(measured["capacity"], "samples/s", "world 2, one thread per rank; weak-scaling efficiency "
                   "needs compute per byte: accumulate with no_sync, large per-rank batches"),
    fallback=Limit(MAX_RESTARTS, "restarts", "torchrun --max-restarts; after that the job stops and a rerun at any "
                   "world size resumes from the newest complete checkpoint; a changed dataset or config is refused"),
    justification=(
        "World 2 only pays off when the all-reduce of about 4 bytes per parameter hides behind enough compute: "
        "no_sync accumulation gives one all-reduce per optimizer step and large per-rank batches raise the "
        "flops per byte; with 64-sample micro-batches and a sync each time the same model scales far worse. "
        "Checkpoints cost the measured percentage at this interval (Young/Daly picks it from save cost and "
        "MTBF); a SIGKILL costs the restart latency plus at most ckpt_every steps of redone work; the sampler "
        "stores a global position, so a resize continues the epoch exactly once."),
)
### END SOLUTION
card
=======
    latency=Limit(measured["latency"], "s", "SIGKILL to the first resumed step at world 2"),
    cost=Limit(measured["cost"], "%", "checkpoint time / training time at the drill's interval"),
    capacity=Limit(measured["capacity"], "samples/s", "world 2, one thread per rank"),
    fallback=Limit(1, "restarts", "torchrun restarts the group once, then the job stops"),
    justification=(
        "World 2 only pays off when the all-reduce of about 4 bytes per parameter hides behind enough "
        "compute: no_sync accumulation gives one all-reduce per optimizer step and large per-rank "
        "batches raise the flops per byte. Checkpoints cost the measured percentage at this interval; "
        "a SIGKILL costs the restart latency plus at most ckpt_every steps of redone work; the sampler "
        "stores a global position."
    ),
)
>>>>>>> replace
