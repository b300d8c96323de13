# mutant: decide_refusal_without_numbers
# exercise: decide
# replaces: decide_solution
# why: refuses with a ValueError that says nothing fits but names neither the budget nor the smallest
#      mem_bytes on offer
@@
-        raise ValueError(f"no candidate fits: mem_budget {mem_budget:.4g} B per rank, smallest on offer "
-                         f"{c['mem_bytes'].min():.4g} B (or every one breaks the node, batch or rank limits)")
+        raise ValueError("no candidate fits the memory, node, batch and rank limits")
