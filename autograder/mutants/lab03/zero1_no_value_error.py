# mutant: zero1_no_value_error
# exercise: zero1
# replaces: zero1_solution
# why: more shards than elements silently gives empty shards instead of a ValueError
@@
-    if world > numel:
-        raise ValueError(f"cannot cut {numel} parameter elements into {world} shards (more shards than elements)")
