# mutant: card_capacity_exact
# exercise: decide
# replaces: card_solution
# why: the capacity is the exact B_simple (every per-sample gradient), not the measured estimate the plan used:
#   23 % away here, inside check_card's 25 %
@@
-    capacity=Limit(float(ns["b_simple"]), "samples/step", "measured critical batch (B_simple) of the lab's task"),
+    capacity=Limit(float(exact["b_simple"]), "samples/step", "measured critical batch (B_simple) of the lab's task"),
