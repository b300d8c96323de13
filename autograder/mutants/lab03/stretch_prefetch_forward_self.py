# mutant: stretch_prefetch_forward_self
# exercise: prefetch
# replaces: prefetch_solution
# why: the forward list starts at the block itself (off by one): the last of the depth blocks ahead is never
#      prefetched
@@
-        block.set_modules_to_forward_prefetch(blocks[i + 1:i + 1 + depth])
+        block.set_modules_to_forward_prefetch(blocks[i:i + depth])
