# mutant: sampler_empty_dataset
# exercise: sampler
# replaces: sampler_solution
# why: pads with `indices * ceil(pad / len(indices))` without guarding the empty dataset: n = 0 raises
#   ZeroDivisionError (issue 10: the old visible tests never tried n = 0)
@@
-        reps = math.ceil(pad / len(indices)) if indices else 0
+        reps = math.ceil(pad / len(indices))
