# mutant: stretch_prefetch_backward_ahead
# exercise: prefetch
# replaces: prefetch_solution
# why: the backward list copies the forward one: in backward it re-gathers blocks whose backward is already
#      done (extra all-gathers) instead of the ones still to come
@@
-        block.set_modules_to_backward_prefetch(blocks[max(i - depth, 0):i][::-1])  # backward runs i-1 first
+        block.set_modules_to_backward_prefetch(blocks[i + 1:i + 1 + depth])
