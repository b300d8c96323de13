# mutant: ckpt_no_model_check
# exercise: ckpt
# replaces: ckpt_solution
# why: loads without comparing checkpoint and model: a different model fails inside DCP, not as ValueError
import torch.distributed.checkpoint as dcp  # noqa: E402
from torch.distributed.checkpoint.state_dict import get_model_state_dict, get_state_dict, set_state_dict  # noqa: E402, F401


def save_sharded(model: nn.Module, optimizer: torch.optim.Optimizer, path: str) -> None:
    """Every rank writes its shards of the model and optimizer state (SPMD)."""
    ### BEGIN SOLUTION
    model_sd, optim_sd = get_state_dict(model, optimizer)
    dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=path)
    ### END SOLUTION


def load_sharded(model: nn.Module, optimizer: torch.optim.Optimizer, path: str) -> None:
    """Load ``path`` into this (possibly differently sharded) model and optimizer; ValueError naming the
    tensor and both shapes if the checkpoint is of a different model."""
    ### BEGIN SOLUTION
    model_sd, optim_sd = get_state_dict(model, optimizer)
    state = {"model": model_sd, "optim": optim_sd}
    dcp.load(state, checkpoint_id=path)  # in place, into this world size's shards
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
    ### END SOLUTION
