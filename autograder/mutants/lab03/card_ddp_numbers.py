# mutant: card_ddp_numbers
# exercise: ckpt
# replaces: card_solution
# why: the card quotes FSDP2's latency with DDP's bytes: inconsistent with every measured configuration
from course_dist.card import Limit, SolutionCard  # noqa: E402

BUDGET = 8 * 2**30
### BEGIN SOLUTION
pick_row = timing_tbl[timing_tbl["policy"] == "block"].iloc[0]  # per-block FSDP2: sharded, one block gathered
card = SolutionCard(
    lab="lab03",
    latency=Limit(float(pick_row["step_s"]), "s/step", "FSDP2 per block, world 2, gloo CPU, lab model"),
    cost=Limit(float(timing_tbl.iloc[0]["bytes_per_step"]) / 2, "bytes per step per rank", "DDP's"),
    capacity=Limit(float(BUDGET * PSI / pick_row["peak_bytes"]), "parameters per rank",
                   "8 GiB per rank, peak per parameter as measured (activations at this batch)"),
    fallback=Limit(float(load_s), "s to resume at another world size", "DCP resharded load, world 2 -> 3"),
    justification=("FSDP2 per block keeps only a shard of parameters, gradients and AdamW state on each "
                   "rank and gathers one block at a time, so its peak is the sharded state plus one block; "
                   "it moves 1.5x DDP's bytes, which on this 2-core box costs step time against DDP, but it "
                   "is the only option whose capacity grows with the number of ranks. Its sharded checkpoint "
                   "reloads at another world size, so a lost rank costs a restart, not the run."),
)
### END SOLUTION
card  # noqa: B018 - displays the card
