# mutant: stretch_prefetch_no_value_error
# exercise: prefetch
# replaces: prefetch_solution
# why: no check of the depth: depth 0 silently sets empty lists (no prefetch at all) instead of refusing
@@
-    if depth < 1:
-        raise ValueError(f"prefetch depth must be >= 1, got {depth}")
