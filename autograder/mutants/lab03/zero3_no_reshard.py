# mutant: zero3_no_reshard
# exercise: zero3
# replaces: zero3_solution
# why: never frees after forward (every unit stays gathered until its backward): 1 all-gather per unit
@@
-        unit.free()  # reshard after forward: the backward gathers again
-        if out.requires_grad:
-            out.register_hook(lambda _grad: unit.gather())  # runs just before this module's backward
