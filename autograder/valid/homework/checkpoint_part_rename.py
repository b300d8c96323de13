# valid: checkpoint_part_rename
# exercise: atomic
# replaces: fttrainer/checkpoint.py
# why: every file (each rank's file and the manifest) is written as <name>.part, flushed, fsynced and renamed
#      to <name> inside the staging folder, which is fsynced before it is published: as durable as writing
#      <name> and fsyncing it (the data is on disk before the rename; the staging folder's fsync keeps the new
#      names), so it must keep every point. Hunks of the reference module: _write_durable and the manifest
#      write in _commit changed.
@@
-    with open(path, "wb") as f:
+    _write_part_then_rename(path, data)
+    return {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
+
+
+def _write_part_then_rename(path: Path, data: bytes | memoryview) -> None:
+    """Write ``<path>.part``, flush and fsync it, then rename it to ``path`` (the staging folder's fsync,
+    before publication, makes the new name durable)."""
+    part = path.with_name(path.name + ".part")
+    with open(part, "wb") as f:
@@
-    return {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
+    os.replace(part, path)
@@
-    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1))
-    _fsync_file(tmp / MANIFEST)
+    _write_part_then_rename(tmp / MANIFEST, json.dumps(manifest, indent=1).encode())
