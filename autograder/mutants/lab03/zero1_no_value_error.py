# mutant: zero1_no_value_error
# exercise: zero1
# replaces: zero1_solution
# why: more shards than elements silently gives empty shards instead of a ValueError
<<<<<<< find
    if world > numel:
        raise ValueError(f"cannot cut {numel} parameter elements into {world} shards (more shards than elements)")
=======
>>>>>>> replace
<<<<<<< find
        # made once, reused every step (no per-step flatten, pad, clone or copy back): the parameters become
        # views into `full`, which the all-gather fills; `self.shard`, what AdamW updates in place, is a view
        # into `padded`, my chunk-sized piece of the all-gather
        self.full = lab03.flatten([p.detach() for p in self.params], self.chunk * self.world)
        self.padded = self.full[self.rank * self.chunk:(self.rank + 1) * self.chunk].clone()
        self.shard = self.padded[:self.end - self.start]  # my slice of the parameters: the optimizer's master
        self.grad = torch.zeros_like(self.shard)
        self.optimizer = torch.optim.AdamW([self.shard], lr=lr, weight_decay=weight_decay)
        lab03.view_params(self.params, self.full)
=======
        flat = lab03.flatten([p.detach() for p in self.params])
        self.shard = flat[self.start:self.end].clone()  # my slice of the parameters: the optimizer's master
        self.optimizer = torch.optim.AdamW([self.shard], lr=lr, weight_decay=weight_decay)
>>>>>>> replace
<<<<<<< find
        if grad_shard is None:  # copy only my slice of the averaged gradients, not all of them
            grad_shard = lab03.flat_slice([p.grad for p in self.params], self.start, self.end, out=self.grad)
        self.shard.grad = grad_shard
        self.optimizer.step()  # updates self.shard, hence my chunk of `padded`
        # ONE all-gather of equal chunk-sized pieces for all parameters (one latency; torch's
        # ZeroRedundancyOptimizer broadcasts parameter by parameter from each owner), straight into the
        # parameters (views of `full`; its padded tail belongs to none)
        dist.all_gather_single(self.full, self.padded)
=======
        if grad_shard is None:
            grad_shard = lab03.flatten([p.grad for p in self.params])[self.start:self.end]
        self.shard.grad = grad_shard.clone()
        self.optimizer.step()
        # all_gather_single needs equal pieces: pad my (possibly shorter) shard to chunk
        padded = lab03.flatten([self.shard], self.chunk)
        full = padded.new_empty(self.chunk * self.world)
        dist.all_gather_single(full, padded)
        lab03.unflatten_into(full, self.params)  # the padded tail is dropped here
>>>>>>> replace
