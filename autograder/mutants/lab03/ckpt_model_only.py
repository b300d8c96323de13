# mutant: ckpt_model_only
# exercise: ckpt
# replaces: ckpt_solution
# why: saves and loads the model but not the optimizer: the resumed step uses fresh AdamW moments
import torch.distributed.checkpoint as dcp  # noqa: E402
from torch.distributed.checkpoint.state_dict import get_model_state_dict, get_state_dict, set_state_dict  # noqa: E402


def save_sharded(model: nn.Module, optimizer: torch.optim.Optimizer, path: str) -> None:
    """Every rank writes its shards of the model and optimizer state (SPMD)."""
    ### BEGIN SOLUTION
    model_sd, optim_sd = get_state_dict(model, optimizer)
    dcp.save({"model": model_sd}, checkpoint_id=path)
    ### END SOLUTION


def load_sharded(model: nn.Module, optimizer: torch.optim.Optimizer, path: str) -> None:
    """Load ``path`` into this (possibly differently sharded) model and optimizer; ValueError naming the
    tensor and both shapes if the checkpoint is of a different model."""
    ### BEGIN SOLUTION
    saved = dcp.FileSystemReader(path).read_metadata().state_dict_metadata
    in_ckpt = {k[len("model."):]: tuple(m.size) for k, m in saved.items() if k.startswith("model.")}
    mine = {k: tuple(t.shape) for k, t in get_model_state_dict(model).items()}
    for key in sorted(set(in_ckpt) | set(mine)):
        if in_ckpt.get(key) != mine.get(key):
            raise ValueError(f"checkpoint {path} is of a different model: {key} has shape {in_ckpt.get(key)} "
                             f"there and {mine.get(key)} here")
    model_sd, optim_sd = get_state_dict(model, optimizer)
    state = {"model": model_sd}
    dcp.load(state, checkpoint_id=path)  # in place, into this world size's shards
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=optim_sd)
    ### END SOLUTION
