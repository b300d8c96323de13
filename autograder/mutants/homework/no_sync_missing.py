# mutant: no_sync_missing
# exercise: ddp
# replaces: fttrainer/ddp.py
# why: accumulates correctly (loss / accum) but never enters model.no_sync(): every micro-batch's backward
#      all-reduces the gradients - same numbers, accum times the communication (the losses cannot tell)
@@
-        for i, idx in enumerate(micro_batches):
-            last = i == accum - 1
-            # Gradients of the first accum-1 micro-batches stay local; the forward must run inside
-            # no_sync too.
-            ctx = model.no_sync() if (isinstance(model, DDP) and not last) else nullcontext()
-            with ctx:
-                x, y = data.batch(idx)
-                loss = (
-                    F.cross_entropy(model(x.to(device)), y.to(device)) / accum
-                )  # mean over the global batch
-                loss.backward()
-            if last:
-                grads_ready, reduced = clock.last, clock.mark()
+        for idx in micro_batches:
+            x, y = data.batch(idx)
+            loss = F.cross_entropy(model(x.to(device)), y.to(device)) / accum
+            loss.backward()
             total += loss.detach()
+        grads_ready, reduced = clock.last, clock.mark()
