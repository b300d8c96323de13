# mutant: zero1_no_sync_groups
# exercise: zero1
# replaces: zero1_solution
# why: never copies the param_groups to the wrapped optimizer: an LR scheduler edits the wrapper's groups and
#      the inner optimizer keeps stepping with the initial lr
@@
-        self.sync_groups()
