# mutant: card_one_interval_fallback
# exercise: card
# replaces: card_solution
# why: fallback counts one interval: a corrupt newest checkpoint sends the loader one further back
from course_dist.card import Limit, SolutionCard

### BEGIN SOLUTION
card = SolutionCard(
    lab="lab04",
    latency=Limit(meas["recovery_s"], "s from a rank's death to the first resumed step", "world 2, SIGKILL"),
    cost=Limit(meas["overhead_pct"], "% of training time stalled in saves", f"a save every {EVERY} steps"),
    capacity=Limit(float(meas["bytes_per_rank"]), "bytes per rank per checkpoint", "keep=3 triples it"),
    fallback=Limit(EVERY * meas["step_s"] + meas["recovery_s"], "s of work lost at worst",
                   "newest checkpoint corrupt: the loader skips it (sha256), resumes from the one before"),
    justification="A save every 500 steps keeps the stall small against the step time, a SIGKILLed rank "
                  "costs a relaunch plus the steps since the last save, a corrupt one an interval more.",
)
### END SOLUTION
card  # noqa: B018
