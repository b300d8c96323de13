# mutant: ring_send_whole_tensor
# exercise: ring
# replaces: ring_solution
# why: point-to-point only, but every rank sends its whole tensor to every other rank and sums in rank order:
#   ·n elements per rank instead of 2(R-1)/R·n (the same at world 2, 1.5x at world 3). The old test
#   passed it.
@@
+    parts = [t.clone() if r == rank else torch.empty_like(t) for r in range(world)]
+    reqs = [dist.isend(t.clone(), r) for r in range(world) if r != rank and t.numel()]
+    for r in range(world):
+        if r != rank and t.numel():
+            dist.recv(parts[r], r)
+    for q in reqs:
+        q.wait()
+    t.copy_(sum(parts[1:], parts[0].clone()))
+    return t
     # tensor_split: R views covering any length (the first len % R chunks are one longer; some may be empty)
