# mutant: stretch_prefetch_forward_depth_one
# exercise: prefetch
# replaces: prefetch_solution
# why: forward prefetches only the next block whatever the depth (depth 2 behaves as depth 1 in forward)
@@
-        block.set_modules_to_forward_prefetch(blocks[i + 1:i + 1 + depth])
+        block.set_modules_to_forward_prefetch(blocks[i + 1:i + 2])
