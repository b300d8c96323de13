# mutant: stretch_prefetch_backward_depth_one
# exercise: prefetch
# replaces: prefetch_solution
# why: backward prefetches only the block just before whatever the depth (torch's default, set explicitly)
@@
-        block.set_modules_to_backward_prefetch(blocks[max(i - depth, 0):i][::-1])  # backward runs i-1 first
+        block.set_modules_to_backward_prefetch(blocks[max(i - 1, 0):i])
