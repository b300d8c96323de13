# mutant: card_cost_unlabelled
# exercise: decide
# replaces: card_solution
# why: the cost note gives its formula but not that the cost is simulated (a model's number read as a
#   measurement)
@@
-               f"simulated: {lab05.PRICE} $/rank-hour x {plan['steps']:.0f} simulated steps"),
+               f"{lab05.PRICE} $/rank-hour x {plan['steps']:.0f} steps"),
