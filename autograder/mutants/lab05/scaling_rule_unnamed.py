# mutant: scaling_rule_unnamed
# exercise: scaling
# replaces: scaling_solution
# why: refuses an unknown rule without naming it: the caller cannot tell which argument was wrong
@@
-        raise ValueError(f"rule must be 'linear' or 'sqrt', got {rule!r}")
+        raise ValueError("unknown LR scaling rule: use 'linear' or 'sqrt'")
