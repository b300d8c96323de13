# mutant: verify_sizes_only
# exercise: atomic
# replaces: fttrainer/checkpoint.py
# why: verification compares the sizes in the manifest but never the sha256: a flipped byte keeps its size
@@
-        if hash_files and _sha256(f) != info["sha256"]:
-            return f"{name} fails its sha256 check"
