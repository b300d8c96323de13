# mutant: no_numpy_rng
# exercise: state
# replaces: fttrainer/state.py
# why: torch and Python RNGs saved and restored, NumPy's forgotten (the text lists it)
@@
-        "numpy": np.random.get_state(),
@@
-    np.random.set_state(state["numpy"])
