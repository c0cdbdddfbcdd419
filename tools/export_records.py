"""export_records.py: the traced layers of tools/export_model.py as plain records, and their numbers
made into expressions in the sequence length T and the batch B ("768*T", "B*768*T").

    from export_records import records, generalise_layers, symbolic
"""


def _numbers(record, path=()):
    """Every number of a record, with its path, in a fixed order."""
    if isinstance(record, bool):
        return []
    if isinstance(record, (int, float)):
        return [(path, record)]
    if isinstance(record, dict):
        out = []
        for k in sorted(record):
            out += _numbers(record[k], path + (k,))
        return out
    if isinstance(record, (list, tuple)):
        out = []
        for i, v in enumerate(record):
            out += _numbers(v, path + (i,))
        return out
    return []


def _set(record, path, value):
    for p in path[:-1]:
        record = record[p]
    if isinstance(record, tuple):
        raise TypeError("tuples are converted to lists first")
    record[path[-1]] = value


def symbolic(vals, ts):
    """Express numbers seen at three sequence lengths as a*T*T + b*T + c (integers), e.g. "768*T+768"."""
    (v1, v2, v3), (t1, t2, t3) = vals, ts
    if v1 == v2 == v3:
        return v1
    from fractions import Fraction as Fr
    # Solve the 3x3 Vandermonde system exactly.
    d12 = Fr(v2 - v1, t2 - t1)
    d23 = Fr(v3 - v2, t3 - t2)
    a = (d23 - d12) / (t3 - t1)
    b = d12 - a * (t1 + t2)
    c = v1 - a * t1 * t1 - b * t1
    if any(x.denominator != 1 for x in (a, b, c)):
        raise ValueError(f"export_model: {vals} at T={ts} is not an integer polynomial in T")
    terms = []
    for coef, sym in ((int(a), "T*T"), (int(b), "T"), (int(c), "")):
        if coef == 0:
            continue
        if not sym:
            terms.append(str(coef))
        else:
            terms.append(sym if coef == 1 else f"{coef}*{sym}")
    return "+".join(terms).replace("+-", "-")


def _get(record, path):
    for p in path:
        record = record[p]
    return record


def records(layers):
    """The traced layers as plain lists and dicts (op inputs [ref, elements, bytes per element])."""
    out = []
    for l in layers:
        ops = []
        for o in l["ops"]:
            r = {"op": o["op"], "in": [[ref, n, b or 0] for ref, n, b in o["in"]],
                 "out": [[n, b or 0] for n, b in o["out"]]}
            for k in ("flops", "gemm", "conv", "attn", "attention"):
                if k in o:
                    r[k] = list(o[k]) if isinstance(o[k], (list, tuple)) else o[k]
            ops.append(r)
        rec = {"name": l["name"], "kind": l["kind"], "params": list(l["params"]), "dims": dict(l["dims"]),
               "ops": ops, "saved": [[ref, n, b or 0, saver] for _, ref, n, b, saver in l["saved"]]}
        views = [sum(o.get("views", (0, 0))[k] for o in l["ops"]) for k in (0, 1)]
        if views[0]:
            rec["views"] = views
        out.append(rec)
    return out


def generalise_layers(traces, ts, batch2):
    """Numbers of the traces at batch 2 (sequence lengths `ts`) and of the batch-4 trace become
    expressions in T and B: "768*T" for a size one sample has, "B*768*T" for one that grows with the
    batch (an activation), a plain number for one that does not (a weight)."""
    base = traces[0]
    for path, v1 in _numbers(base):
        leaf = path[-1]
        if "params" in path or "attn" in path:
            continue
        if path[1] == "views":  # calls, the same at every batch and length
            if any(_get(t, path) != v1 for t in traces[1:] + [batch2]):
                raise ValueError(f"export_model: layer {base[path[0]]['name']} makes a number of view calls that "
                                 "depends on the sequence length or the batch")
            continue
        if len(path) >= 3 and path[-3] in ("in", "saved") and leaf != 1:
            continue  # a reference's bytes per element, or the saver's index
        if len(path) >= 3 and path[-3] == "out" and leaf != 0:
            continue
        if "attention" in path and leaf == 4:
            continue
        dims = "dims" in path  # the layer's kind fields: one sample's (the cost rules scale them)
        vals = [v1] + [_get(t, path) for t in traces[1:]]
        v4 = _get(batch2, path)
        if v4 == 2 * v1 and v1 != 0:
            if any(v % 2 for v in vals):
                raise ValueError(f"export_model: layer {base[path[0]]['name']} {'/'.join(map(str, path[1:]))} is "
                                 f"{vals} for two samples: not a whole number per sample")
            half = [v // 2 for v in vals]
            text = str(symbolic(half, ts) if ts else half[0])
            expr = symbolic(half, ts) if dims and ts else half[0] if dims else \
                f"B*{text}" if all(ch not in text[1:] for ch in "+-") else f"B*({text})"
        elif v4 == v1:
            expr = symbolic(vals, ts) if ts else v1
        else:
            raise ValueError(f"export_model: layer {base[path[0]]['name']} {'/'.join(map(str, path[1:]))} is {v1} "
                             f"for two samples and {v4} for four: neither per sample nor fixed")
        _set(base, path, expr)
    return base
