# mutant: atomic_resave_no_retire
# exercise: atomic
# replaces: atomic_solution
# why: a re-save of an existing step (after a restart) renames onto the old directory without retiring it:
#      os.replace onto a non-empty directory fails
@@
-    if final.exists():
-        lab04.retire(final)  # out of the step- namespace first: a crash mid-delete leaves only debris
