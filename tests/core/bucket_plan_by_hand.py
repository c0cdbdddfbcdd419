#!/usr/bin/env python3
"""bucket_plan_by_hand.py: an independent, plain reading of PyTorch's bucketing (reducer.cpp
compute_bucket_assignment_by_size; distributed.py _ddp_init_helper; Reducer::rebuild_buckets),
used once to write the expected bucket sizes in bucket_plan_test.cpp. It shares no code with
core/bucket_plan.cpp. Usage: bucket_plan_by_hand.py MODEL.yaml CAP_MB|default [find_unused]"""
import sys
import yaml

MIB = 1024 * 1024
m = yaml.safe_load(open(sys.argv[1]))
cap = None if sys.argv[2] == "default" else float(sys.argv[2])
find_unused = len(sys.argv) > 3
size = {}
for p in m["parameters"]:
    n = 1
    for d in p["shape"]:
        n *= d
    size[p["name"]] = 4 * n
names = [p["name"] for p in m["parameters"]]

def assign(order, limits):
    buckets, cur, total, li = [], [], 0, 0
    for name in order:
        cur.append(name)
        total += size[name]
        if total >= limits[li]:
            buckets.append(cur)
            cur, total = [], 0
            li = min(li + 1, len(limits) - 1)
    if cur:
        buckets.append(cur)
    return buckets

cap_bytes = 25 * MIB if cap is None else int(cap * MIB)
first = MIB if cap is None else cap_bytes
if find_unused:
    plan = list(reversed(assign(names, [first, cap_bytes])))
else:
    earliest = {}
    for i, layer in enumerate(m["layers"]):
        for p in layer.get("params", []):
            earliest.setdefault(p, i)
    order = []
    for i in range(len(m["layers"]) - 1, -1, -1):
        layer = m["layers"][i]
        ps = list(layer.get("params", []))
        if layer["kind"] == "linear":
            ps.reverse()
        order += [p for p in ps if earliest[p] == i]
    plan = assign(order, [first, cap_bytes])
print(", ".join(str(sum(size[n] for n in b)) for b in plan))
