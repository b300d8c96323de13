# mutant: zero3_gather_forward_only
# exercise: zero3
# replaces: zero3_solution
# why: gathers before forward only: backward runs on freed parameters
@@
-        if out.requires_grad:
-            out.register_hook(lambda _grad: unit.gather())  # runs just before this module's backward
