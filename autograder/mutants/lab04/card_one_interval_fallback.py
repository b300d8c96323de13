# mutant: card_one_interval_fallback
# exercise: card
# replaces: card_solution
# why: fallback counts one interval: a corrupt newest checkpoint sends the loader one further back
from course_dist.card import Limit, SolutionCard

### BEGIN SOLUTION
card = SolutionCard(
    lab="lab04",
    latency=Limit(meas["recovery_s"], "s from a rank's death to the first resumed step",
                  "world 2, SIGKILL, supervisor relaunch, resume from the newest checkpoint"),
    cost=Limit(meas["overhead_pct"], "% of training time stalled in saves",
               f"capture + durable save of {meas['bytes_per_rank'] / 1e6:.1f} MB every {EVERY} steps "
               f"({meas['save_s'] * 1e3:.0f} ms per save, {meas['step_s'] * 1e3:.1f} ms per step)"),
    capacity=Limit(float(meas["bytes_per_rank"]), "bytes per rank per checkpoint",
                   "model + AdamW moments + scheduler + RNGs + position; keep=3 triples the storage"),
    fallback=Limit(EVERY * meas["step_s"] + meas["recovery_s"], "s of work lost at worst",
                   "newest checkpoint corrupt: the loader skips it (sha256), resumes from the one before"),
    justification="Saving every 50 steps keeps the stall small against the step time, a SIGKILLed rank costs "
                  "one relaunch plus the steps since the last checkpoint, and a corrupt newest checkpoint "
                  "costs one more interval because the loader verifies checksums and falls back.",
)
### END SOLUTION
card  # noqa: B018
