# valid: contract_allreduce_rows
# exercise: contract
# replaces: contract_solution
# why: gathers every rank's fingerprint with one all_reduce of one-hot rows (adding zeros is exact in
#      float64); under bug 3 that all-reduce pairs with rank 0's pending DDP bucket and gloo aborts on the
#      size mismatch (a RankError, measured) instead of hanging: the text accepts both endings
def check_replicas(name: str, tensors: list[torch.Tensor]) -> None:
    """Collective: raise ``ContractViolation(name, ranks)`` on every rank if any rank differs from rank 0."""
    mine = fingerprint(tensors).to(course_dist.device())
    rows = torch.zeros(dist.get_world_size(), mine.numel(), dtype=mine.dtype, device=mine.device)
    rows[dist.get_rank()] = mine
    dist.all_reduce(rows)
    ranks = [r for r in range(1, len(rows)) if not torch.equal(rows[r], rows[0])]
    if ranks:
        raise ContractViolation(name, ranks, f"fingerprints {rows.tolist()}")
