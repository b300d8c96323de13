# mutant: broadcast_params_only
# exercise: replicas
# replaces: broadcast_solution
# why: broadcasts parameters but not buffers
def broadcast_model(model: nn.Module, src: int = 0) -> None:
    """Overwrite, in place, every parameter and buffer of ``model`` with rank ``src``'s values (a collective:
    every rank calls it)."""
    ### BEGIN SOLUTION
    with torch.no_grad():
        # Buffers too: a BatchNorm's running stats or LabNet's input scale are state, not parameters.
        for t in list(model.parameters()):
            dist.broadcast(t, src=src)
    ### END SOLUTION
