# mutant: shared_without_world_size
# exercise: state
# replaces: fttrainer/state.py
# why: the shared state forgets the world size it was saved at
@@
-        "world_size": world_size,
