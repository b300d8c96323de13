# mutant: ring_all_gather_sum
# exercise: ring
# replaces: ring_solution
# why: all_gather of every rank's tensor, then a sum in rank order: right on every rank, but not a ring
#   (a collective, R x the memory, (R-1)·n sent per rank). The old test forbade only dist.all_reduce.
def ring_all_reduce(t: torch.Tensor) -> torch.Tensor:
    """Sum the contiguous tensor ``t`` over all ranks, in place, with a ring of send/recv; returns ``t``."""
    ### BEGIN SOLUTION
    world, rank = dist.get_world_size(), dist.get_rank()
    if world == 1:
        return t
    everyone = [torch.empty_like(t) for _ in range(world)]
    dist.all_gather(everyone, t)
    t.copy_(sum(everyone[1:], everyone[0].clone()))
    return t
    # tensor_split: R views covering any length (the first len % R chunks are one longer; some may be empty)
    chunks = list(torch.tensor_split(t.view(-1), world))
    right, left = (rank + 1) % world, (rank - 1) % world
    scratch = torch.empty_like(chunks[0])

    def exchange(send: torch.Tensor, recv: torch.Tensor) -> None:
        # isend first, then recv: a blocking send on every rank at once could deadlock on a full ring.
        # Every rank knows every chunk's size, so empty chunks are skipped on both sides consistently.
        req = dist.isend(send, right) if send.numel() else None
        if recv.numel():
            dist.recv(recv, left)
        if req is not None:
            req.wait()

    for s in range(world - 1):  # reduce-scatter
        send_i, recv_i = (rank - s) % world, (rank - s - 1) % world
        buf = scratch[: chunks[recv_i].numel()]
        exchange(chunks[send_i], buf)
        chunks[recv_i].add_(buf)
    for s in range(world - 1):  # all-gather: pass the finished chunks around
        send_i, recv_i = (rank + 1 - s) % world, (rank - s) % world
        exchange(chunks[send_i], chunks[recv_i])
    return t
    ### END SOLUTION
