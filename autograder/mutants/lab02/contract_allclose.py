# mutant: contract_allclose
# exercise: contract
# replaces: contract_solution
# why: compares fingerprints with a tolerance: 'close' replicas pass and drift apart later
@@
-    ``fingerprint(tensors)`` differs (bitwise) from rank 0's; ``ranks`` lists those ranks in increasing
-    order."""
+    ``fingerprint(tensors)``
+    differs (bitwise) from rank 0's; ``ranks`` lists those ranks in increasing order."""
@@
-    diverged = [r for r, fp in enumerate(everyone) if not torch.equal(fp, everyone[0])]
+    diverged = [r for r, fp in enumerate(everyone) if not torch.allclose(fp, everyone[0])]
