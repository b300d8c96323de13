# mutant: decide_nothing_fits_empty
# exercise: decide
# replaces: decide_solution
# why: returns an empty choice instead of raising when no candidate is feasible
@@
-        raise ValueError(f"no candidate fits: mem_budget {mem_budget:.4g} B per rank, smallest on offer "
-                         f"{c['mem_bytes'].min():.4g} B (or every one breaks the node, batch or rank limits)")
+        return {}
