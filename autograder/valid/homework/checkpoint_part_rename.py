# valid: checkpoint_part_rename
# exercise: atomic
# replaces: fttrainer/checkpoint.py
# why: every file (each rank's file and the manifest) is written as <name>.part, flushed, fsynced and renamed
#      to <name> inside the staging folder, which is fsynced before it is published: as durable as writing
#      <name> and fsyncing it (the data is on disk before the rename; the staging folder's fsync keeps the new
#      names), so it must keep every point. Hunks of the reference module: _write_durable and the manifest
#      write in _commit changed.
@@
-    with _no_crc32():
-        torch.save(obj, path)
+    part = path.with_name(path.name + ".part")
+    with open(part, "wb") as f:
+        torch.save(obj, f)
+        f.flush()
+        os.fsync(f.fileno())  # the bytes on disk before the name changes
+    os.replace(part, path)  # inside the staging folder, fsynced before it is published
@@
-    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1))  # written last: the commit record
+    (tmp / (MANIFEST + ".part")).write_text(json.dumps(manifest, indent=1))
+    _fsync_file(tmp / (MANIFEST + ".part"))
+    os.replace(tmp / (MANIFEST + ".part"), tmp / MANIFEST)
