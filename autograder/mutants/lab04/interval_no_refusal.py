# mutant: interval_no_refusal
# exercise: interval
# replaces: interval_solution
# why: young_daly_interval does not check its inputs: a zero checkpoint cost returns an interval of 0 s
@@
-    if cost_s <= 0 or mtbf_s <= 0:
-        raise ValueError(f"cost_s and mtbf_s must be > 0, got cost_s={cost_s}, mtbf_s={mtbf_s}")
