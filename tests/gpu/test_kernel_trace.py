"""tests/gpu/kernel_trace.py on a synthetic trace (CPU, no GPU): two graphs and a kernel outside
them, replays of three kernels whose ends step by known amounts, a replay cut short at the end,
and PDL-style early starts (a kernel starting before its predecessor ends). What it must print:
the busier graph, the replays it keeps, each node's median 'adds' (end(n) - end(n - 1); the first
node's from the previous replay's last end), the step, and the adds summed by kernel name.

Usage: python3 tests/gpu/test_kernel_trace.py REPO_ROOT
"""
import csv
import os
import subprocess
import sys
import tempfile

root = sys.argv[1]
rows = []
t = 1_000_000
names = ["void (anonymous namespace)::norm_kernel<4>(float*, int)",
         "void gemm<2, 8, false, 0>(unsigned short const*, void const*)",
         "void (anonymous namespace)::norm_kernel<4>(float*, int)"]
adds_ns = [3000, 2000, 5000]  # what each node adds after the one before
for rep in range(12):
    t += 4000  # the gap between graph launches: part of node 0's adds
    for j in range(3):
        end = t + adds_ns[j]
        start = t - 1500 if j > 0 else t  # launched early, before its predecessor's end
        rows.append([start, end, 7, 100 + j, 5, 16, 1, 1, 128, names[j]])
        t = end
rows.append([t + 10, t + 500, 7, 100, 5, 16, 1, 1, 128, names[0]])  # a replay cut short
for rep in range(3):  # another graph, fewer replays
    rows.append([t + 1000 * (rep + 2), t + 1000 * (rep + 2) + 300, 9, 300, 6, 1, 1, 1, 32, "void other()"])
rows.append([0, 100, 7, 0, 0, 1, 1, 1, 32, "void memset_kernel()"])
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "trace.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow("start_ns,end_ns,stream,graph_node,graph,grid_x,grid_y,grid_z,block_x,name".split(","))
        w.writerows(rows)
    out = subprocess.run([sys.executable, os.path.join(root, "tests/gpu/kernel_trace.py"), path,
                          "--skip", "2"], capture_output=True, text=True, check=True).stdout
print(out)
lines = out.splitlines()
assert lines[0].startswith("graph 5: 12 replays of 3 kernels, medians over 10"), lines[0]
node = {int(l.split()[0]): l.split() for l in lines[2:5]}
assert node[0][1] == "norm_kernel" and node[1][1] == "gemm", node
assert [float(node[j][-1]) for j in range(3)] == [7.0, 2.0, 5.0], node  # node 0: 4 us gap + 3
assert float(node[1][-2]) == 3.5, node[1]  # dur: 2 us after the predecessor + 1.5 us early
step = [l for l in lines if l.startswith("step:")][0]
assert "sum of adds 14.0 us" in step and "end to end 14.0 us" in step, step
by = {l.split()[0]: float(l.split()[1]) for l in lines[lines.index("adds by kernel:") + 1:]}
assert by == {"norm_kernel": 12.0, "gemm": 2.0}, by
print("ok: kernel_trace.py reads the synthetic trace as built")
