# mutant: stretch_prefetch_backward_far_first
# exercise: prefetch
# replaces: prefetch_solution
# why: the backward list in forward order (farthest first, issue 34 class 5): at depth 2 the right blocks are
#      gathered, but block i asks for i-2 before i-1, the one its backward needs next
@@
-        block.set_modules_to_backward_prefetch(blocks[max(i - depth, 0):i][::-1])  # backward runs i-1 first
+        block.set_modules_to_backward_prefetch(blocks[max(i - depth, 0):i])
