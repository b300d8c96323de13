# mutant: contract_names_everyone
# exercise: contract
# replaces: contract_solution
# why: raises naming every rank instead of the ones that differ from rank 0
@@
-    ``fingerprint(tensors)`` differs (bitwise) from rank 0's; ``ranks`` lists those ranks in increasing
-    order."""
+    ``fingerprint(tensors)``
+    differs (bitwise) from rank 0's; ``ranks`` lists those ranks in increasing order."""
@@
-        raise ContractViolation(name, diverged, detail)
+        raise ContractViolation(name, list(range(dist.get_world_size())), detail)
