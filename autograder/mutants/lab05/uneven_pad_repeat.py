# mutant: uneven_pad_repeat
# exercise: uneven
# replaces: uneven_solution
# why: pads by repeating the rank's last real batch with full weight (as a sampler would): no hang, but those
#   samples are counted twice and the parameters leave the reference
@@
-        with Join([ddp]):  # DDP is the joinable: it knows which all-reduces to shadow
+        with Join([ddp]):
@@
-            real = i < len(batches)
-            x, y = batches[i] if real else lab05.dummy_batch()
-            lab05.sgd_step(ddp, opt, x, y, weight=1.0 if real else 0.0)
+            x, y = batches[min(i, len(batches) - 1)]
+            lab05.sgd_step(ddp, opt, x, y)
