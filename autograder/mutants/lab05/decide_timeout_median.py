# mutant: decide_timeout_median
# exercise: decide
# replaces: decide_solution
# why: timeout from the typical (median) step, not the tail: healthy slow steps trip it
<<<<<<< find
    return margin * max(step_s)
=======
    return margin * sorted(step_s)[len(step_s) // 2]
>>>>>>> replace
