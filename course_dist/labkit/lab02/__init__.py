"""Lab 02 machinery - "DDP under the hood". Never a solution: every harness takes the student's function.

One concept per file, all re-exported here so that notebooks say ``lab02.<name>``:
- ``model``: the lab's MLP (a buffer, a frozen and an optionally unused parameter, optional BatchNorm), its
  data, fingerprints and state comparisons;
- ``train``: the training loops the tests compare (naive, torch DDP, one process, bucketed), the collective
  recorder and the gradient-accumulation toy;
- ``checks``: rank functions behind the broadcast and ring tests, and the ring's traffic read from the trace;
- ``drills``: the replica checker's planted bugs (stretch A) and the kill drill of the solution card;
- ``measure``: set_epoch/padding, ring-vs-gloo bus bandwidth with the alpha-beta fit, step times and the
  bucket sweep, with their plots.

Single process (a notebook cell)::

    from course_dist.labkit import lab02
    model = lab02.LabNet(lab02.model_config())       # the lab's model (size from COURSE_FAST)

Inside ranks (what the notebook's cells do)::

    course_dist.launch(lab02.bug_no_broadcast, world_size=2, args=(check_replicas,))
"""

from course_dist.labkit.lab02.checks import (
    P2P_OPS,
    broadcast_check,
    ring_check,
    ring_input,
    ring_traffic,
    ring_traffic_problem,
)
from course_dist.labkit.lab02.drills import (
    bug_no_broadcast,
    bug_skip_set_epoch,
    bug_unused_param,
    clean_check,
    kill_drill,
    one_ulp_check,
    unused_param_outcome,
)
from course_dist.labkit.lab02.measure import (
    busbw_rank,
    epoch_coverage,
    eval_correctness,
    fit_alpha_beta,
    measure_busbw,
    measure_ddp,
    padded_eval,
    plot_busbw,
    plot_step_times,
    time_steps,
)
from course_dist.labkit.lab02.model import (
    MB,
    ContractViolation,
    LabNet,
    ModelConfig,
    fingerprint,
    global_batch,
    make_data,
    make_model,
    max_abs_diff,
    model_config,
    state_fingerprint,
    trainable_sizes,
    worst_tensor,
)
from course_dist.labkit.lab02.train import (
    accumulation_toy,
    record_collectives,
    run_all,
    sgd,
    shard,
    train_bucketed,
    train_naive,
    train_single,
    train_torch_ddp,
)

__all__ = [
    "MB", "P2P_OPS", "ContractViolation", "LabNet", "ModelConfig", "accumulation_toy", "broadcast_check",
    "bug_no_broadcast", "bug_skip_set_epoch", "bug_unused_param", "busbw_rank", "clean_check",
    "epoch_coverage", "eval_correctness", "fingerprint", "fit_alpha_beta", "global_batch", "kill_drill",
    "make_data", "make_model", "max_abs_diff", "measure_busbw", "measure_ddp", "model_config",
    "one_ulp_check", "padded_eval", "plot_busbw", "plot_step_times", "record_collectives", "ring_check",
    "ring_input", "ring_traffic", "run_all", "ring_traffic_problem", "sgd", "shard", "state_fingerprint",
    "time_steps", "train_bucketed", "train_naive", "train_single", "train_torch_ddp", "trainable_sizes",
    "unused_param_outcome", "worst_tensor",
]
