# mutant: atomic_manifest_first
# exercise: atomic
# replaces: atomic_solution
# why: computes the checksums in memory and writes the manifest before the parts
@@
-    files = {}
+    blobs = {}
@@
-        torch.save(obj, buf)  # into memory: torch.save(obj, path) writes through C++ and never fsyncs
-        files[f"{name}.pt"] = durable_write(tmp / f"{name}.pt", buf.getbuffer())
-    # the manifest is the commit record: written last, it lists what a complete checkpoint holds
+        torch.save(obj, buf)
+        blobs[f"{name}.pt"] = buf.getvalue()
+    files = {n: {"bytes": len(b), "sha256": hashlib.sha256(b).hexdigest()} for n, b in blobs.items()}
     durable_write(tmp / MANIFEST, json.dumps({"step": step, "files": files}, indent=1).encode())
+    for n, b in blobs.items():
+        durable_write(tmp / n, b)
