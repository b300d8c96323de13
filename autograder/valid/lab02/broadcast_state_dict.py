# valid: broadcast_state_dict
# exercise: replicas
# replaces: broadcast_solution
# why: broadcasts the state_dict's tensors (detached views of the same storage: every parameter and
#      persistent buffer) and loads them back with a plain load_state_dict, which copies in place
def broadcast_model(model: nn.Module, src: int = 0) -> None:
    """Overwrite, in place, every parameter and buffer of ``model`` with rank ``src``'s values."""
    state = model.state_dict()
    for name in sorted(state):  # the same order on every rank: collectives pair up by call order
        dist.broadcast(state[name], src=src)
    model.load_state_dict(state)
