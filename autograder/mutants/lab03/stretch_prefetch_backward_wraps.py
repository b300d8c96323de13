# mutant: stretch_prefetch_backward_wraps
# exercise: prefetch
# replaces: prefetch_solution
# why: the backward slice not clamped at block 0: blocks[i - depth:i] with i < depth starts at a negative
#      index, wraps and comes out empty, so those blocks fall back to torch's one-behind prefetch (written
#      from the release text alone; separated at depth 3, as deep as the chain)
@@
-        block.set_modules_to_backward_prefetch(blocks[max(i - depth, 0):i][::-1])  # backward runs i-1 first
+        block.set_modules_to_backward_prefetch(blocks[i - depth:i][::-1])
