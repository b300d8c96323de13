# mutant: card_wrong_fallback
# exercise: card
# replaces: card_solution
# why: the card's fallback says one restart while the drills ran torchrun with --max-restarts 3
from course_dist import Limit, SolutionCard

card = SolutionCard(
    lab="homework",
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
