# mutant: zero3_no_free_after_forward
# exercise: zero3
# replaces: zero3_solution
# why: never frees after forward but still gathers again before backward (2 all-gathers per unit): every
#      unit stays gathered from its forward to its backward, so the whole model is live at the peak
@@
-        unit.free()  # reshard after forward: the backward gathers again
