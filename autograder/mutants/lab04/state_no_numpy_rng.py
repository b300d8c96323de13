# mutant: state_no_numpy_rng
# exercise: state
# replaces: state_solution
# why: never restores numpy's RNG: the jitter differs after resume
@@
-    np.random.set_state(rng["numpy"])
