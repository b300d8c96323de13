# mutant: atomic_torch_save_path
# exercise: atomic
# replaces: atomic_solution
# why: torch.save(obj, path): C++ writer, never fsynced, invisible to the old recorder (issue 11)
@@
-        buf = io.BytesIO()
-        torch.save(obj, buf)  # into memory: torch.save(obj, path) writes through C++ and never fsyncs
-        files[f"{name}.pt"] = durable_write(tmp / f"{name}.pt", buf.getbuffer())
+        torch.save(obj, str(tmp / f"{name}.pt"))
+        data = (tmp / f"{name}.pt").read_bytes()
+        files[f"{name}.pt"] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
