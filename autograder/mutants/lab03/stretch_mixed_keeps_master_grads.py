# mutant: stretch_mixed_keeps_master_grads
# exercise: mixed
# replaces: mixed_solution
# why: the fp32 master gradients are never dropped: 4 more bytes per parameter live between steps (the
#      arithmetic is unchanged: every step overwrites them)
@@
-        m.grad = None
