# mutant: contract_raises_when_equal
# exercise: contract
# replaces: contract_solution
# why: 'is not None' is always true: identical replicas raise a ContractViolation naming no rank
@@
-    if diverged:
+    if diverged is not None:
