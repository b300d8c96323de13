# mutant: broadcast_trainable_only
# exercise: replicas
# replaces: broadcast_solution
# why: skips frozen parameters (requires_grad=False), as if only trainable state mattered
def broadcast_model(model: nn.Module, src: int = 0) -> None:
    """Overwrite, in place, every parameter and buffer of ``model`` with rank ``src``'s values (a collective:
    every rank calls it)."""
    ### BEGIN SOLUTION
    with torch.no_grad():
        # Buffers too: a BatchNorm's running stats or LabNet's input scale are state, not parameters.
        for t in [*(p for p in model.parameters() if p.requires_grad), *model.buffers()]:
            dist.broadcast(t, src=src)
    ### END SOLUTION
