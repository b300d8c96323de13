# mutant: atomic_trash_collision
# exercise: atomic
# replaces: atomic_solution
# why: retires into .trash-<name> without clearing old debris: os.replace fails ENOTEMPTY (issue 11)
@@
-        shutil.rmtree(trash, ignore_errors=True)  # debris of an earlier crashed delete would block the rename
