# mutant: atomic_missing_root_none
# exercise: atomic
# replaces: atomic_solution
# why: nothing complete (or no root) returns None instead of raising FileNotFoundError: the caller then
#      starts from scratch silently, or fails later on None
@@
-    raise FileNotFoundError(f"no complete checkpoint under {root}; skipped: {skipped or 'nothing found'}")
+    return None  # nothing to resume from
