# mutant: zero3_never_freed
# exercise: zero3
# replaces: zero3_solution
# why: gathered parameters are never freed: right numbers, no memory saved (the ledger catches it)
@@
         lab03.view_params(self.params, self.full)  # parameters read whatever self.full holds
-        self.free()
+        lab03.free_storage(self.full)
@@
-        lab03.free_storage(self.full)
+        pass
