# mutant: activations_ignores_dropout_flag
# exercise: activations
# replaces: activations_solution
# why: counts masks and the dropout output even without dropout
@@
-    if not dropout:  # no masks, no dropout output
-        return s * b * h * 16 * value_bytes + a * s * s * b * value_bytes
