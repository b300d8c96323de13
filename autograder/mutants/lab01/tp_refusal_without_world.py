# mutant: tp_refusal_without_world
# exercise: tp
# replaces: tp_solution
# why: the refusal names the feature count but not the world size it must divide by
@@
-        raise ValueError(f"{what} = {features} is not divisible by the world size {world}")
+        raise ValueError(f"{what} = {features} does not split evenly over the ranks")
