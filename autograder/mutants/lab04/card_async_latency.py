# mutant: card_async_latency
# exercise: interval
# replaces: card_solution
# why: quotes the async staging stall as the latency of the synchronous save it recommends
from course_dist.card import Limit, SolutionCard

### BEGIN SOLUTION
card = SolutionCard(
    lab="lab04",
    latency=Limit(meas["async_stall_s"], "s stall per save",
                  f"synchronous durable save of {meas['bytes_per_rank'] / 1e6:.1f} MB; async staging stalls "
                  f"{meas['async_stall_s']:.4f} s"),
    cost=Limit(100 * expected_overhead(young, meas["sync_stall_s"], MTBF_S, RESTART_S), "% of training time",
               f"every {young:.1f} s (Young/Daly), MTBF 3 h, restart 60 s; storage {KEEP} x bytes/rank"),
    capacity=Limit(float(meas["bytes_per_rank"]), "bytes per rank per checkpoint",
                   "model + AdamW moments + scheduler; RNG and position add < 1 KB per rank"),
    fallback=Limit(2 * young + RESTART_S, "s of work lost at worst",
                   "newest checkpoint corrupt: the loader skips it (checksum), resumes from the one before"),
    justification="Checkpointing every Young/Daly interval balances the stall of each save against the work "
                  "a failure throws away; the simulation agrees with the first-order model near the optimum, "
                  "and a corrupt newest checkpoint costs one extra interval because the loader verifies "
                  "checksums.",
)
### END SOLUTION
card  # noqa: B018
