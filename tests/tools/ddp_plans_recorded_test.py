#!/usr/bin/env python3
"""ddp_plans_recorded_test.py GRADSYNC PLANS.json.gz: DDP bucket plans recorded from real PyTorch on a
GPU against `gradsync buckets`.

The file holds what tools/gpu_reference.py --buckets-only recorded (scripts/gpu-check, stage buckets):
real torch.nn.parallel.DistributedDataParallel over NCCL at world size 1, iterations 1-3, every bucket
a communication hook saw (parameter names from bucket.parameters(), bytes of bucket.buffer()), for
each zoo model with DDP's default cap and with bucket_cap_mb 1 and 25, default and static_graph.
`gradsync buckets --json --pytorch-version` (the torch version in the file) must give the same
buckets, in the same order, with the same parameters and bytes. Needs no torch: the data is the
oracle. Each difference is printed with the model, the setting, the iteration and the first
differing bucket.
"""
import gzip
import json
import subprocess
import sys

gradsync, path = sys.argv[1], sys.argv[2]
with gzip.open(path, "rt") as f:
    data = json.load(f)
version = data["torch"].split("+")[0]
failures, compared = [], 0
errors = [k for k in data["plans"] if k.endswith("|error")]
if errors:
    failures.append(f"{path}: the recording failed for {errors}")
for key, plans in sorted(data["plans"].items()):
    if key.endswith("|error"):
        continue
    model, cap, mode = key.split("|")
    cmd = [gradsync, "buckets", "--model", model, "--json", "--pytorch-version", version]
    if cap != "default":
        cmd += ["--bucket-cap-mb", cap]
    if mode == "static_graph":
        cmd.append("--static-graph")
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        failures.append(f"{' '.join(cmd)}: exit {out.returncode}: {out.stderr.strip()}")
        continue
    got = {it["iteration"]: [(b["params"], b["bytes"]) for b in it["buckets"]]
           for it in json.loads(out.stdout)["iterations"]}
    for it, buckets in sorted(plans.items()):
        want = [(params, nbytes) for params, nbytes in buckets]
        g = got.get(int(it), got[max(got)])  # gradsync lists iterations until the plan is steady
        compared += 1
        if want == g:
            continue
        k = next(i for i in range(max(len(want), len(g))) if i >= len(want) or i >= len(g) or want[i] != g[i])
        w = want[k] if k < len(want) else None
        h = g[k] if k < len(g) else None
        failures.append(f"{model}, cap {cap}, {mode}, iteration {it}: bucket {k}: PyTorch {data['torch']} "
                        f"{(w[1], w[0][:3], len(w[0])) if w else None} (bytes, first params, count), gradsync "
                        f"{(h[1], h[0][:3], len(h[0])) if h else None}; {len(want)} buckets against {len(g)}")
for f in failures:
    print("FAIL:", f)
print(f"{compared} plans of PyTorch {data['torch']} compared, {len(failures)} failures")
if failures or compared == 0:
    sys.exit(1)
