"""``python -m course_dist.labkit.homework._drill_main <pkg> [trainer args]``: the trainer with a slowed rank.

``HW_SLOW_COMPUTE="<rank>:<seconds>"`` makes every forward pass of that rank's model sleep ``seconds``
(a global forward pre-hook on the outermost module call): the straggler's slowness sits *inside*
forward/backward, where a probe placed before the step cannot see it. Other ranks run unchanged.
"""

from __future__ import annotations

import importlib
import os
import sys
import time


def _install(rank: int, seconds: float) -> None:
    import torch

    depth = [0]

    def pre(module, args):  # noqa: ANN001, ANN202 - torch hook signature
        if depth[0] == 0 and int(os.environ.get("RANK", "0")) == rank:
            time.sleep(seconds)
        depth[0] += 1

    def post(module, args, out):  # noqa: ANN001, ANN202
        depth[0] -= 1

    torch.nn.modules.module.register_module_forward_pre_hook(pre)
    torch.nn.modules.module.register_module_forward_hook(post)


def main(argv: list[str]) -> int:
    pkg, args = argv[0], argv[1:]
    spec = os.environ.get("HW_SLOW_COMPUTE", "")
    if spec:
        who, _, secs = spec.partition(":")
        _install(int(who), float(secs))
    return importlib.import_module(f"{pkg}.train").main(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
