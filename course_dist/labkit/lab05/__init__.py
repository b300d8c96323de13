"""Lab 05 machinery: planted hangs and their flight-recorder dumps, uneven inputs, stragglers, scaling models
and plots (never a solution).

Notebooks say ``from course_dist.labkit import lab05`` and use ``lab05.plant``, ``lab05.run_uneven``, ...
Names resolve lazily: a rank that unpickles a planted-hang function imports ``hangs`` only, not pandas and
the measurement modules (18 ranks importing pandas at once on 2 cores outlast a 3-second hang timeout).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, tuple[str, str]] = {
    **{n: ("hangs", n) for n in ("ALL_CASES", "CASES", "MORE_CASES", "WORLD", "Frame", "plant", "truth",
                                   "user_frames")},
    **{n: ("frdumps", n) for n in ("fr_dumps", "read_dumps")},
    "fr_truth": ("frdumps", "truth"),
    **{n: ("plots", n) for n in ("plot_scaling_sim", "plot_step_tail")},
    **{n: ("phases", n) for n in ("EVAL_BATCHES", "phase_seconds", "seconds_in")},
    **{n: ("scaling", n) for n in ("PRICE", "S_MIN", "allreduce_s", "calibration", "candidates",
                                   "fit_alpha_beta", "grad_norms", "measure_allreduce", "simulate",
                                   "step_time_samples",
                                   "true_noise_scale")},
    **{n: ("stragglers", n) for n in ("experiment", "planted_spans", "reference_grad", "step_times")},
    "run_straggler": ("stragglers", "run"),
    **{n: ("uneven", n) for n in ("STRATEGIES", "dummy_batch", "join_overhead", "params_close", "run_uneven",
                                  "sgd_step")},
    "uneven_reference": ("uneven", "reference"),
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'course_dist.labkit.lab05' has no attribute {name!r}")
    module, attr = _EXPORTS[name]
    value = getattr(importlib.import_module(f"course_dist.labkit.lab05.{module}"), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
