# mutant: ring_divisible_only
# exercise: ring
# replaces: ring_solution
# why: chunks of n // R elements: the tail of a length not divisible by R is never reduced
@@
-    chunks = list(torch.tensor_split(t.view(-1), world))
+    size = t.numel() // world
+    chunks = [t.view(-1)[i * size:(i + 1) * size] for i in range(world)]
