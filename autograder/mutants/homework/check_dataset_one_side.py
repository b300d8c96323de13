# mutant: check_dataset_one_side
# exercise: recovery
# replaces: fttrainer/data.py
# why: the version refusal names the checkpoint's version but not the current dataset's
@@
-            f"{current.version!r} "
