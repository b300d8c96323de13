# mutant: ring_no_allgather
# exercise: ring
# replaces: ring_solution
# why: stops after reduce-scatter: each rank has one summed chunk
@@
-    for s in range(world - 1):  # all-gather: pass the finished chunks around
-        send_i, recv_i = (rank + 1 - s) % world, (rank - s) % world
-        exchange(chunks[send_i], chunks[recv_i])
