# mutant: atomic_keep_zero_accepted
# exercise: atomic
# replaces: atomic_solution
# why: accepts keep=0 (the old reference's [:-0] kept everything) instead of refusing it (issue 11)
@@
-    if keep < 1:
-        raise ValueError(f"keep must be >= 1 (the checkpoint just written is always kept), got keep={keep}")
