# mutant: bucketed_ignores_no_sync
# exercise: bucketed
# replaces: bucketed_solution
# why: no_sync() sets a flag the hook never reads: collectives run during accumulation
class BucketedDDP(nn.Module):
    """Data-parallel wrapper: bucketed gradient all-reduce overlapped with backward (the optimized version of
    exercise 2's naive ``average_gradients``). Replicas must already be identical (exercise 2).

    Use: ``ddp = BucketedDDP(model)``; ``ddp(x).backward()``; ``ddp.finish_gradient_synchronization()``;
    ``opt.step()``. ``self.buckets`` is ``assign_buckets`` over the trainable parameters."""

    def __init__(self, module: nn.Module, bucket_cap_mb: float = 25.0, first_bucket_mb: float = 1.0) -> None:
        super().__init__()
        self.module = module
        ### BEGIN SOLUTION
        for handle in getattr(module, "_bucketed_ddp_hooks", []):
            handle.remove()  # wrapped before: the old wrapper's hooks would reduce every gradient a second time
        self.params = [p for p in module.parameters() if p.requires_grad]
        sizes = [p.numel() * p.element_size() for p in self.params]
        self.buckets = assign_buckets(sizes, int(bucket_cap_mb * MB), int(first_bucket_mb * MB))
        self._bucket_of = {i: b for b, members in enumerate(self.buckets) for i in members}
        self._sync = True
        self._reset()
        # post-accumulate: fires once p.grad holds this backward's gradient (accumulated onto what was there)
        module._bucketed_ddp_hooks = [p.register_post_accumulate_grad_hook(lambda p, i=i: self._on_grad_ready(i))
                                      for i, p in enumerate(self.params)]
        ### END SOLUTION

    def forward(self, *args, **kwargs):
        ### BEGIN SOLUTION
        if self._work:
            # a backward since the last finish (accumulation without no_sync): write its averages back now, so
            # this micro-batch's backward accumulates onto them and reduces again - what torch DDP does
            self.finish_gradient_synchronization()
        with torch.no_grad():
            for b in self.module.buffers():  # broadcast_buffers=True: rank 0's running stats, every forward
                dist.broadcast(b, src=0)
        ### END SOLUTION
        return self.module(*args, **kwargs)

    def _on_grad_ready(self, i: int) -> None:
        ### BEGIN SOLUTION
        self._missing[self._bucket_of[i]] -= 1
        # launch ready buckets strictly in order: all ranks must issue the same collectives in the same order
        while self._next < len(self.buckets) and self._missing[self._next] == 0:
            members = self.buckets[self._next]
            flat = torch.cat([self.params[j].grad.reshape(-1) for j in members])
            flat.div_(dist.get_world_size())  # pre-divide like DDP: the sum of averages is the average
            self._work.append((members, flat, dist.all_reduce(flat, async_op=True)))
            self._next += 1
        ### END SOLUTION

    def _reset(self) -> None:
        self._missing = [len(b) for b in self.buckets]
        self._next, self._work = 0, []

    def finish_gradient_synchronization(self) -> None:
        """Wait for every bucket's all-reduce and write the averages back into ``.grad`` (call before the
        step)."""
        ### BEGIN SOLUTION
        if self._next != len(self.buckets):
            self._reset()
            raise RuntimeError(f"only {self._next} of {len(self.buckets)} buckets were launched: a trainable "
                               "parameter got no gradient (unused parameter?)")
        for members, flat, work in self._work:
            work.wait()
            offset = 0
            for j in members:
                g = self.params[j].grad
                g.copy_(flat[offset:offset + g.numel()].view_as(g))
                offset += g.numel()
        self._reset()
        ### END SOLUTION

    @contextmanager
    def no_sync(self):
        """Gradient accumulation: inside, backward launches no collective (your hook reads ``self._sync``)."""
        previous, self._sync = self._sync, False
        try:
            yield
        finally:
            self._sync = previous
