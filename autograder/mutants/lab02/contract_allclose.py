# mutant: contract_allclose
# exercise: contract
# replaces: contract_solution
# why: compares fingerprints with a tolerance: 'close' replicas pass and drift apart later
def check_replicas(name: str, tensors: list[torch.Tensor]) -> None:
    """Collective: raise ``ContractViolation(name, ranks)`` on every rank if any rank's
    ``fingerprint(tensors)``
    differs (bitwise) from rank 0's; ``ranks`` lists those ranks in increasing order."""
    ### BEGIN SOLUTION
    mine = fingerprint(tensors).to(course_dist.device())
    everyone = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(everyone, mine)
    diverged = [r for r, fp in enumerate(everyone) if not torch.allclose(fp, everyone[0])]
    if diverged:
        detail = "; ".join(f"rank {r}: {everyone[r].tolist()}" for r in [0, *diverged])
        raise ContractViolation(name, diverged, detail)
    ### END SOLUTION
