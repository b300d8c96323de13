# mutant: commit_without_fsync
# exercise: atomic
# replaces: fttrainer/checkpoint.py
# why: the two-phase commit without a single fsync of the manifest or the directories: atomic under SIGKILL
#      (os.replace), but a power cut can bring back an empty manifest or undo the rename
@@
-    files: dict[str, Any] = {}
+    files = {}
@@
-    required = _required(world_size)
-    missing = sorted(required - set(files))
+    missing = sorted(_required(world_size) - set(files))
@@
-    _fsync_file(tmp / MANIFEST)
-    _fsync_dir(tmp)
-    if final.exists():  # same step saved again (e.g. SIGTERM right after a periodic save, or a redo)
+    if final.exists():
         _retire(final)
-    os.replace(tmp, final)  # atomic: readers see no folder or the whole one
-    _fsync_dir(root)
+    os.replace(tmp, final)
@@
-    _fsync_file(pointer)
     os.replace(pointer, root / "latest")
-    _fsync_dir(root)
     prune(root, keep_last, newest=step)
-    log.info("checkpoint %s published (%d files, world %d)", final, len(files), world_size)
