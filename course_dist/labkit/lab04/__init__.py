"""Lab 04 machinery (checkpoints and restarts): the trainer, the drills that grade each exercise, the
power-loss simulation, the failure simulator. Never a solution, never a hidden test.

    from course_dist.labkit import lab04
    lab04.Trainer(lab04.Config())                      # the model whose next step needs *everything*
    lab04.check_resume(capture, restore, cfg, k=5, m=4)  # exercise 1
    lab04.kill_drill(save, load)                         # exercise 2 (SIGKILL + power loss at every op)
    lab04.stream_drill(elastic_batches)                  # exercise 3
    lab04.read_progress(root)                            # exercise 4

One concept per module: ``trainer`` (model, data, RNGs), ``resume`` (next-step equivalence checks),
``simple`` (the simple checkpointer and the stall measurement), ``ckptfmt`` (on-disk format, its oracle,
retention),
``recorder`` (watch and kill a writer), ``powerloss`` (what a power cut leaves), ``drills`` (kill drill,
protocol rules), ``damage`` (corruption and retention drills), ``distributed`` (stretch A),
``elastic`` (exercise 3), ``recovery`` (exercise 4), ``sim`` (stretch B's failure simulator), ``sharded``
(stretch C: an FSDP2 state saved with DCP's async_save, published and resumed at another world size) and
``dcpstall`` (the stall of async_save vs a blocking dcp.save, the resharded load time).
"""

from __future__ import annotations

from . import (
    ckptfmt,
    damage,
    dcpstall,
    distributed,
    drills,
    elastic,
    powerloss,
    recorder,
    recovery,
    resume,
    sharded,
    sim,
    simple,
)
from .ckptfmt import MANIFEST, Loaded, demo_parts, prune, retire, same, step_dir_name, verify_dir
from .damage import corruption_drill, drill_variants, keep_drill
from .distributed import distributed_drill
from .drills import kill_drill, protocol_problems
from .elastic import ELASTIC_TOL, HIDDEN_COMBOS, VISIBLE_COMBOS, elastic_drill, random_combos, stream_drill
from .powerloss import power_loss
from .recorder import run_in_child
from .recovery import (
    RecoveryReport,
    dump_job,
    read_progress,
    run_pickled,
    uninterrupted_world,
)
from .resume import ResumeReport, TwiceReport, check_restore_twice, check_resume, fingerprint
from .sharded import dcp_drill, layout
from .simple import dir_bytes, measure_save, simple_load, simple_save, to_cpu
from .trainer import (
    MLP,
    BatchFn,
    Config,
    Run,
    Trainer,
    epoch_order,
    fixed_batches,
    make_data,
    params_vector,
    roundtrip,
    scramble_rngs,
    seed_rank_rngs,
    train,
    uninterrupted,
)

__all__ = [
    "BatchFn", "Config", "ELASTIC_TOL", "HIDDEN_COMBOS", "Loaded", "MANIFEST", "MLP", "RecoveryReport",
    "ResumeReport", "Run", "Trainer", "TwiceReport", "VISIBLE_COMBOS", "check_restore_twice", "check_resume",
    "ckptfmt", "corruption_drill", "damage", "dcp_drill", "dcpstall", "demo_parts", "dir_bytes",
    "distributed", "distributed_drill", "drill_variants", "drills", "dump_job", "elastic", "elastic_drill",
    "epoch_order", "fingerprint", "fixed_batches", "keep_drill", "kill_drill", "layout", "make_data",
    "measure_save", "params_vector", "power_loss", "powerloss", "protocol_problems", "prune", "random_combos",
    "read_progress", "recorder", "recovery", "resume", "retire", "roundtrip", "run_in_child",
    "run_pickled", "same", "scramble_rngs", "seed_rank_rngs", "sharded", "sim", "simple", "simple_load",
    "simple_save", "step_dir_name", "stream_drill", "to_cpu", "train", "uninterrupted", "uninterrupted_world",
    "verify_dir",
]
