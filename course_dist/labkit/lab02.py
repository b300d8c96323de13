"""Lab 02 machinery - "DDP under the hood". Never a solution: every harness takes the student's function.

One concept per file, all re-exported here so that notebooks say ``lab02.<name>``:
- ``lab02_core``: the model (a buffer, a frozen and an optionally unused parameter), the data, fingerprints,
  a collective recorder, and the training loops the tests compare (naive, torch DDP, one process, bucketed);
- ``lab02_checks``: rank functions behind the tests of exercises 2, 4, 6 and the three planted bugs;
- ``lab02_measure``: set_epoch/padding, ring-vs-gloo bus bandwidth with the alpha-beta fit, step times and the
  bucket sweep, with their plots.

Single process (a notebook cell)::

    from course_dist.labkit import lab02
    model = lab02.LabNet(lab02.model_config())       # the lab's model (size from COURSE_FAST)

Inside ranks (what the notebook's cells do)::

    course_dist.launch(lab02.bug_no_broadcast, world_size=2, args=(check_replicas,))
"""

from course_dist.labkit.lab02_checks import (
    broadcast_check,
    bug_no_broadcast,
    bug_skip_set_epoch,
    bug_unused_param,
    clean_check,
    kill_drill,
    one_ulp_check,
    ring_check,
    ring_input,
)
from course_dist.labkit.lab02_core import (
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
    record_collectives,
    state_fingerprint,
    train_bucketed,
    train_naive,
    train_single,
    train_torch_ddp,
    trainable_sizes,
)
from course_dist.labkit.lab02_measure import (
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

__all__ = [
    "ContractViolation", "LabNet", "MB", "ModelConfig", "broadcast_check", "bug_no_broadcast",
    "bug_skip_set_epoch", "bug_unused_param", "busbw_rank", "clean_check", "epoch_coverage",
    "eval_correctness", "fingerprint", "fit_alpha_beta", "global_batch", "kill_drill", "make_data",
    "make_model", "max_abs_diff", "measure_busbw", "measure_ddp", "model_config", "one_ulp_check",
    "padded_eval", "plot_busbw", "plot_step_times", "record_collectives", "ring_check", "ring_input",
    "state_fingerprint", "time_steps", "train_bucketed", "train_naive", "train_single",
    "train_torch_ddp", "trainable_sizes",
]
