# mutant: frdump_line_str
# exercise: frdump
# replaces: frdump_solution
# why: the line as a string (as a "file:line" site would give it), not the int the text asks for
@@
-            line = next(f["line"] for f in e["frames"] if f["file"].endswith("hangs.py"))
+            line = next(str(f["line"]) for f in e["frames"] if f["file"].endswith("hangs.py"))
