# mutant: ring_all_gather_sum
# exercise: ring
# replaces: ring_solution
# why: all_gather of every rank's tensor, then a sum in rank order: right on every rank, but not a ring
#   (a collective, R x the memory, (R-1)·n sent per rank). The old test forbade only dist.all_reduce.
@@
+    everyone = [torch.empty_like(t) for _ in range(world)]
+    dist.all_gather(everyone, t)
+    t.copy_(sum(everyone[1:], everyone[0].clone()))
+    return t
     # tensor_split: R views covering any length (the first len % R chunks are one longer; some may be empty)
