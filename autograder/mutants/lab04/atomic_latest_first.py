# mutant: atomic_latest_first
# exercise: atomic
# replaces: atomic_solution
# why: moves the latest pointer before the checkpoint it names is published
@@
-    os.replace(tmp, final)  # atomic: readers see no directory or the whole one
-    fsync_dir(root)  # the new name survives a power loss
     durable_write(root / ".latest.tmp", final.name.encode())
-    os.replace(root / ".latest.tmp", root / "latest")  # only ever names a published checkpoint
+    os.replace(root / ".latest.tmp", root / "latest")
+    os.replace(tmp, final)
+    fsync_dir(root)
