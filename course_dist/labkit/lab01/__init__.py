"""Lab 01 machinery - "Choose data, sharded, tensor or pipeline parallelism". Never a solution: every harness
takes the student's function or class.

One concept per file, re-exported here so that notebooks say ``lab01.<name>``:
- ``model``: the lab model (an MLP of column -> row blocks), its data, live-tensor and saved-tensor ledgers;
- ``activations``: a transformer block's saved-tensor ledger, recomputation's memory/time trade, and a budget
  that activations (not model states) break;
- ``brief``: the brief reproduced (a naive data-parallel job slower at world 2 than 1; the SIGKILL drill);
- ``frame``: the measured one-worker baseline;
- ``comm``: collective timings (real, through ``course_dist.launch``, and synthetic with a known answer);
- ``tp``: the student's tensor-parallel block against the dense block and torch's Colwise/RowwiseParallel;
- ``pipeline``: an executor for a student's pipeline schedule, torch.distributed.pipelining, the kill drill;
- ``decide``: candidate tables (named and random scenarios, and the lab model's own);
- ``plots``: the lab's pictures.
"""

from course_dist.labkit.lab01.activations import (
    TransformerBlock,
    block_ledger,
    decision_case,
    recompute_trade,
)
from course_dist.labkit.lab01.brief import (
    brief_table,
    kill_without_checkpoint,
    naive_dp_rank,
    plot_brief,
    reproduce_brief,
    synthetic_calls,
    throughput,
)
from course_dist.labkit.lab01.comm import (
    COLLECTIVES,
    measure_collectives,
    relative_error,
    ring_constants,
    synthetic,
)
from course_dist.labkit.lab01.decide import SCENARIOS, lab_candidates, max_params, random_scenario, scenario
from course_dist.labkit.lab01.frame import measure_baseline
from course_dist.labkit.lab01.model import (
    Block,
    LabMLP,
    ModelConfig,
    build_model,
    live_state_bytes,
    make_data,
    measure_activations,
    measure_state,
    model_config,
    n_params,
    saved_activation_bytes,
)
from course_dist.labkit.lab01.pipeline import (
    check_actions,
    compare_schedules,
    kill_drill,
    run_schedule,
    single_process,
    torch_schedule,
)
from course_dist.labkit.lab01.plots import plot_alpha_beta, plot_scaling_prediction
from course_dist.labkit.lab01.tp import compare_rank, count_in_window, refuses, time_tp_rank, torch_tp_rank

__all__ = [
    "COLLECTIVES",
    "SCENARIOS",
    "Block",
    "LabMLP",
    "TransformerBlock",
    "ModelConfig",
    "block_ledger",
    "brief_table",
    "build_model",
    "check_actions",
    "compare_rank",
    "compare_schedules",
    "count_in_window",
    "decision_case",
    "kill_drill",
    "kill_without_checkpoint",
    "lab_candidates",
    "live_state_bytes",
    "make_data",
    "measure_activations",
    "max_params",
    "measure_baseline",
    "measure_collectives",
    "measure_state",
    "model_config",
    "n_params",
    "naive_dp_rank",
    "plot_brief",
    "plot_alpha_beta",
    "plot_scaling_prediction",
    "random_scenario",
    "recompute_trade",
    "refuses",
    "relative_error",
    "reproduce_brief",
    "ring_constants",
    "run_schedule",
    "saved_activation_bytes",
    "scenario",
    "single_process",
    "synthetic",
    "synthetic_calls",
    "throughput",
    "time_tp_rank",
    "torch_schedule",
    "torch_tp_rank",
]
