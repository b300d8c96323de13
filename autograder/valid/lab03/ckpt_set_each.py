# valid: ckpt_set_each
# exercise: ckpt
# replaces: ckpt_solution
# why: the model check lists the missing, extra and reshaped tensors before raising (the first one named with
#      both shapes), and the state is put back with set_model_state_dict and set_optimizer_state_dict
#      separately: the same checkpoint files, the same resumed step, the same refusals
import torch.distributed.checkpoint as dcp  # noqa: E402
from torch.distributed.checkpoint.state_dict import (  # noqa: E402
    get_model_state_dict,
    get_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)


def save_sharded(model: nn.Module, optimizer: torch.optim.Optimizer, path: str) -> None:
    """Every rank writes its shards of the model and optimizer state (SPMD)."""
    model_sd, optim_sd = get_state_dict(model, optimizer)
    dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=path)


def load_sharded(model: nn.Module, optimizer: torch.optim.Optimizer, path: str) -> None:
    """Load ``path`` into this (possibly differently sharded) model and optimizer; ValueError naming the
    tensor and both shapes if the checkpoint is of a different model."""
    meta = dcp.FileSystemReader(path).read_metadata().state_dict_metadata
    saved = {k.removeprefix("model."): list(v.size) for k, v in meta.items() if k.startswith("model.")}
    here = {k: list(v.shape) for k, v in get_model_state_dict(model).items()}
    missing = sorted(set(saved) - set(here))
    extra = sorted(set(here) - set(saved))
    reshaped = sorted(k for k in set(saved) & set(here) if saved[k] != here[k])
    if missing or extra or reshaped:
        first = (reshaped + missing + extra)[0]
        raise ValueError(f"{path} does not fit this model: {first}: checkpoint {saved.get(first)}, model "
                         f"{here.get(first)} (reshaped {reshaped}, only in checkpoint {missing}, only in "
                         f"model {extra})")
    model_sd, optim_sd = get_state_dict(model, optimizer)
    state = {"model": model_sd, "optim": optim_sd}
    dcp.load(state, checkpoint_id=path)
    set_model_state_dict(model, state["model"])
    set_optimizer_state_dict(model, optimizer, state["optim"])
