# mutant: state_no_rng
# exercise: state
# replaces: state_solution
# why: saves no RNG state at all: dropout, jitter and scale differ
@@
-    random.setstate(rng["python"])
-    np.random.set_state(rng["numpy"])
-    torch.set_rng_state(rng["torch"])
