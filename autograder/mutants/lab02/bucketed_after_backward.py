# mutant: bucketed_after_backward
# exercise: bucketed
# replaces: bucketed_solution
# why: hooks only count; every bucket's all-reduce is launched after backward ends (no overlap)
@@
-        while self._next < len(self.buckets) and self._missing[self._next] == 0:
+        while False:
@@
+        for members in self.buckets:
+            flat = torch.cat([self.params[j].grad.reshape(-1) for j in members]).div_(dist.get_world_size())
+            self._work.append((members, flat, dist.all_reduce(flat, async_op=True)))
+            self._next += 1
         if self._next != len(self.buckets):
