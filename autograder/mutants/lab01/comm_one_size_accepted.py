# mutant: comm_one_size_accepted
# exercise: comm
# replaces: comm_solution
# why: no check on the sizes: one distinct size gives numpy's ill-conditioned line instead of a ValueError
@@
-    if len(set(sizes)) < 2:
-        raise ValueError(f"need at least 2 distinct message sizes to fit a line, got {len(set(sizes))}")
