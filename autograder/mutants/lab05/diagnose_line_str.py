# mutant: diagnose_line_str
# exercise: diagnose
# replaces: diagnose_solution
# why: the line as the site string's tail ("123"), not an int: a type the text rules out
@@
-        return {"rank": rank, "seq": div.seq, "op": call["op"], "line": int(call["site"].rsplit(":", 1)[1])}
+        return {"rank": rank, "seq": div.seq, "op": call["op"], "line": call["site"].rsplit(":", 1)[1]}
