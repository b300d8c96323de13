# mutant: sampler_pad_once
# exercise: sampler
# replaces: sampler_solution
# why: pads with the head once: too short when the pad exceeds n
@@
-        # repeat the head, wrapping again when the pad is longer than the data (n < world); n = 0: nothing
-        reps = math.ceil(pad / len(indices)) if indices else 0
-        indices += (indices * reps)[:pad]
+        # repeat the head, wrapping again when the pad is longer than the data (n < world)
+        indices += indices[:pad]
