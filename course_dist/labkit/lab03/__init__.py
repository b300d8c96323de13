"""Lab 03 machinery - "FSDP and ZeRO-style sharding". Never a solution: every harness takes the student's
pieces as arguments.

- ``model``: the lab model (uneven parameter count), data, wrap policies, flat-parameter helpers;
- ``ledger``: ``MemoryLedger``, live tensor bytes after every op (CPU has no max_memory_allocated);
- ``traffic``: bytes moved per rank from the course_dist trace; lab01's per-collective bus-byte fit;
- ``zero1``: what makes a sharded optimizer a ``torch.optim.Optimizer`` (flat buckets per dtype, per-parameter
  pieces, groups, state dict) and the requirements check on a model with tied/frozen/unused/bf16 parameters;
- ``rank_use``: ZeRO-1 against DDP(find_unused_parameters=True) when ranks use different parameters;
- ``harness``: rank functions training with ZeRO-1/2/3 (yours), ZeroRedundancyOptimizer and FSDP2;
- ``checkpoint``: DCP save at one world size, load at another;
- ``measure``: the trade-off table and plots;
- ``fsdp_records``: FSDP2's own record of the prefetches each block issued, in order (stretch A);
- ``overlap``: FSDP2's implicit vs explicit prefetch, observed (blocks gathered while each block computes),
  timed and on the ledger, with the overlap condition (stretch A);
- ``mixed``: bf16 parameters and gradients with fp32 master weights against FSDP2's ``MixedPrecisionPolicy``.

    from course_dist.labkit import lab03
    course_dist.launch(lab03.train_zero, world_size=2, args=(ShardedAdamW,))
"""

from course_dist.labkit.lab03.checkpoint import ckpt_resume, ckpt_resume_check, ckpt_train_save
from course_dist.labkit.lab03.fsdp_records import fsdp_records, prefetched, want_prefetched
from course_dist.labkit.lab03.harness import (
    BATCH,
    LR,
    WD,
    fsdp2_check,
    shard_model,
    train_ddp,
    train_fsdp2,
    train_single,
    train_zero,
    train_zero2,
    train_zero3,
    train_zero_redundancy,
    zero1_check,
    zero2_check,
    zero3_check,
)
from course_dist.labkit.lab03.ledger import MemoryLedger, optimizer_state_bytes, tensor_bytes, watch
from course_dist.labkit.lab03.measure import plot_tradeoff, time_steps, timing_table, tradeoff_table
from course_dist.labkit.lab03.mixed import MixedPrecisionAdamW, mixed_check, mixed_precision_check
from course_dist.labkit.lab03.model import (
    POLICIES,
    Block,
    LabModel,
    ModelConfig,
    after_all_grads,
    alloc_storage,
    flat_slice,
    flatten,
    free_storage,
    fsdp2_root_fraction,
    global_batch,
    local_batch,
    make_model,
    max_abs_diff,
    model_config,
    numel,
    param_dict,
    summary,
    unflatten_into,
    unit_count,
    view_params,
    wrap_policy,
)
from course_dist.labkit.lab03.overlap import (
    all_gather_s,
    block_all_gather_s,
    gathered,
    overlap_table,
    prefetch_check,
    prefetch_run,
    shard_blocks,
    want_gathered,
)
from course_dist.labkit.lab03.rank_use import RankUseModel, zero1_rank_use
from course_dist.labkit.lab03.traffic import (
    bytes_moved,
    collective_counts,
    fit_bus,
    fit_table,
    measure_fit,
    predicted_comm_s,
    record_single_collectives,
    traffic,
)
from course_dist.labkit.lab03.zero1 import (
    FlatBucket,
    QuirkyModel,
    ShardedOptimizerBase,
    dtype_groups,
    inner_groups,
    zero1_requirements,
)

__all__ = [
    "after_all_grads", "alloc_storage", "BATCH", "Block", "bytes_moved", "ckpt_resume", "ckpt_resume_check",
    "ckpt_train_save", "collective_counts", "fit_bus", "fit_table", "measure_fit",
    "predicted_comm_s", "flat_slice", "flatten", "free_storage",
    "fsdp2_check", "global_batch", "LabModel", "local_batch", "LR", "make_model", "max_abs_diff",
    "MemoryLedger", "model_config", "ModelConfig", "numel", "optimizer_state_bytes", "param_dict",
    "plot_tradeoff", "POLICIES", "record_single_collectives", "shard_model", "summary", "tensor_bytes",
    "time_steps", "timing_table", "tradeoff_table", "traffic", "train_ddp", "train_fsdp2",
    "train_single", "train_zero", "train_zero2", "train_zero3", "train_zero_redundancy", "unflatten_into",
    "unit_count", "view_params", "watch", "WD", "wrap_policy", "zero1_check", "zero2_check", "zero3_check",
    "FlatBucket", "fsdp2_root_fraction", "QuirkyModel", "ShardedOptimizerBase", "dtype_groups",
    "inner_groups",
    "zero1_requirements", "RankUseModel", "zero1_rank_use",
    "all_gather_s", "block_all_gather_s", "gathered", "overlap_table", "prefetch_check",
    "prefetch_run", "shard_blocks", "want_gathered",
    "fsdp_records", "prefetched", "want_prefetched", "MixedPrecisionAdamW", "mixed_check",
    "mixed_precision_check",
]
