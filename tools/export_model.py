#!/usr/bin/env python3
"""export_model.py: write a gradsync model file (models/README.md) from any torch.nn.Module.

    from export_model import export
    export(model, example_input_fn, name="mynet", path="mynet.yaml", batch=32, seq_len=None)

or from the command line for torchvision models:

    python3 tools/export_model.py torchvision:resnet50 -o resnet50.yaml --batch 32

What it records:
  * parameters in model.parameters() registration order (tied parameters once, under their first
    name), with shape, dtype, requires_grad and whether the owning Embedding has sparse=True;
  * buffers (named_buffers(), persistent or not: DP replicates and DDP broadcasts them all);
  * layers in forward execution order, from forward hooks on leaf modules (a module called twice
    gives two layers, the second named NAME:2), with the parameters each uses and the shapes the
    cost model needs, per sample. Modules may describe themselves with a method
    gradsync_layers(inputs, output) returning a list of layer dicts.
  * per-sample input and output bytes. For sequence models (seq_len given) the model is traced at two
    sequence lengths and every number that grows with T is written as an expression "c*T" or "c*T*T".

Functional operations outside modules (a residual `x + y` in torchvision's ResNet) are not seen.
Needs torch (Debian: python3-torch); meta-device models work, so large models need no memory.
"""
import argparse
import sys

import torch
import torch.nn as nn

DTYPE_NAMES = {
    torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float64: "float64",
    torch.int64: "int64", torch.int32: "int32", torch.uint8: "uint8", torch.int8: "int8", torch.bool: "bool",
}


def _numel(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _first_tensor(x):
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, (tuple, list)):
        for y in x:
            t = _first_tensor(y)
            if t is not None:
                return t
    if isinstance(x, dict):
        for y in x.values():
            t = _first_tensor(y)
            if t is not None:
                return t
    return None


def _flat(x):
    out = []
    for y in x:
        if isinstance(y, (tuple, list)):
            out += _flat(y)
        else:
            out.append(y)
    return out


def _all_tensors(x):
    if isinstance(x, torch.Tensor):
        return [x]
    out = []
    if isinstance(x, (tuple, list)):
        for y in x:
            out += _all_tensors(y)
    elif isinstance(x, dict):
        for y in x.values():
            out += _all_tensors(y)
    elif hasattr(x, "__dict__") and hasattr(x, "keys"):  # HF ModelOutput-like
        for k in x.keys():
            out += _all_tensors(x[k])
    return out


def describe_module(mod, inputs, output):
    """The layer dicts (without name and params) for one leaf module call, per sample (batch 1)."""
    x = _first_tensor(inputs)
    y = _first_tensor(output)
    if hasattr(mod, "gradsync_layers"):
        return mod.gradsync_layers(inputs, output)
    if isinstance(mod, nn.Linear):
        return [{"kind": "linear", "in": mod.in_features, "out": mod.out_features,
                 "tokens": _numel(x.shape) // mod.in_features}]
    if isinstance(mod, nn.Conv2d):
        assert mod.kernel_size[0] == mod.kernel_size[1] and mod.stride[0] == mod.stride[1], "square convs only"
        return [{"kind": "conv2d", "in": mod.in_channels, "out": mod.out_channels, "kernel": mod.kernel_size[0],
                 "stride": mod.stride[0], "padding": mod.padding[0], "groups": mod.groups,
                 "height": int(x.shape[-2]), "width": int(x.shape[-1])}]
    if isinstance(mod, nn.Embedding):
        return [{"kind": "embedding", "num": mod.num_embeddings, "dim": mod.embedding_dim, "tokens": _numel(x.shape)}]
    if isinstance(mod, nn.LayerNorm):
        return [{"kind": "layernorm", "elements": _numel(x.shape)}]
    if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d)):
        return [{"kind": "batchnorm", "elements": _numel(x.shape), "channels": mod.num_features}]
    if isinstance(mod, (nn.ReLU, nn.GELU, nn.SiLU, nn.Tanh, nn.Sigmoid)):
        return [{"kind": "activation", "op": type(mod).__name__.lower(), "elements": _numel(x.shape)}]
    if isinstance(mod, nn.Softmax):
        return [{"kind": "softmax", "elements": _numel(x.shape)}]
    if isinstance(mod, nn.Dropout):
        return [{"kind": "dropout", "elements": _numel(x.shape)}] if mod.p > 0 else []
    if isinstance(mod, (nn.MaxPool2d, nn.AvgPool2d, nn.AdaptiveAvgPool2d)):
        return [{"kind": "pooling", "in_elements": _numel(x.shape), "out_elements": _numel(y.shape)}]
    if isinstance(mod, (nn.Identity, nn.Flatten)):
        return []
    if isinstance(mod, nn.MultiheadAttention):
        # F.multi_head_attention_forward: packed in-projection, attention, out-projection.
        e, h = mod.embed_dim, mod.num_heads
        tokens = _numel(y.shape) // e  # from the output: torchvision passes query/key/value as keywords
        return [{"kind": "linear", "in": e, "out": 3 * e, "tokens": tokens, "params": ["in_proj_weight", "in_proj_bias"]},
                {"kind": "attention", "heads": h, "head_dim": e // h, "q_len": tokens},
                {"kind": "linear", "in": e, "out": e, "tokens": tokens, "params": ["out_proj.weight", "out_proj.bias"]}]
    raise ValueError(f"export_model: no rule for module type {type(mod).__name__}; give it gradsync_layers()")


def _is_leaf(mod):
    return (len(list(mod.children())) == 0 or isinstance(mod, nn.MultiheadAttention)
            or hasattr(mod, "gradsync_layers"))


def trace(model, example_input):
    """Run one forward of batch 1 and return (layers, output tensors)."""
    canonical = {}
    for pname, p in model.named_parameters():
        canonical.setdefault(id(p), pname)
    leaves = {}
    skip = set()
    for mname, mod in model.named_modules():
        if any(mname.startswith(s + ".") for s in skip):
            continue
        if _is_leaf(mod):
            leaves[mname] = mod
            skip.add(mname)
    layers, calls, handles = [], {}, []

    def make_hook(mname, mod):
        def hook(m, inputs, output):
            calls[mname] = calls.get(mname, 0) + 1
            base = mname if calls[mname] == 1 else f"{mname}:{calls[mname]}"
            described = describe_module(m, inputs, output)
            own = [(n, p) for n, p in m.named_parameters()]
            for i, d in enumerate(described):
                d = dict(d)
                if "params" in d:
                    names = d.pop("params")
                    params = [canonical[id(dict(own)[n])] for n in names]
                elif i == 0:
                    params = [canonical[id(p)] for _, p in own]
                else:
                    params = []
                sub = d.pop("suffix", None)
                name = base if len(described) == 1 and sub is None else f"{base}.{sub or d['kind']}"
                layers.append({"name": name, "kind": d.pop("kind"), "params": params, **d})
        return hook

    for mname, mod in leaves.items():
        handles.append(mod.register_forward_hook(make_hook(mname, mod)))

    # Parameters no leaf module owns (ViT's class_token, pos_embedding) are used by plain torch
    # functions; record each such use where it happens, as an elementwise layer.
    leaf_params = {id(p) for m in leaves.values() for p in m.parameters()}
    orphans = {id(p): canonical[id(p)] for p in model.parameters() if id(p) not in leaf_params}

    from torch.overrides import TorchFunctionMode

    class OrphanUses(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            used = [orphans[id(a)] for a in _flat(args) + _flat(list(kwargs.values())) if id(a) in orphans]
            if used:
                y = _first_tensor(out)
                op = getattr(func, "__name__", "op")
                for pname in used:
                    layers.append({"name": f"{pname}.{op}", "kind": "elementwise", "params": [pname], "op": op,
                                   "elements": _numel(y.shape) if y is not None else 1})
            return out

    with torch.no_grad(), OrphanUses():
        out = model(*example_input)
    for h in handles:
        h.remove()
    # Disambiguate names produced twice in one call (e.g. two linears of an MHA).
    seen = {}
    for l in layers:
        if l["name"] in seen:
            seen[l["name"]] += 1
            l["name"] = f"{l['name']}:{seen[l['name']]}"
        else:
            seen[l["name"]] = 1
    return layers, _all_tensors(out)


def _symbolic(vals, ts):
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


def export(model, example_input_fn, name, path, batch, seq_len=None, description="", source="",
           output_what="", input_what="", loss_inside=False, unused=()):
    """Trace `model` and write its gradsync model file to `path`.

    example_input_fn(T) returns the forward's positional arguments for batch 1 (T is None for
    models without a sequence length). The output's elements are recorded; their bytes follow the
    run's precision, so outputs are written as elements, inputs as bytes.
    """
    if seq_len is None:
        args = example_input_fn(None)
        layers, outs = trace(model, args)
        in_bytes = sum(_numel(a.shape) * a.element_size() for a in args if isinstance(a, torch.Tensor))
        out_elems = sum(_numel(o.shape) for o in outs)
    else:
        ts = (8, 16, 32)
        args = [example_input_fn(t) for t in ts]
        traced = [trace(model, a) for a in args]
        names = [[l["name"] for l in ls] for ls, _ in traced]
        assert names[0] == names[1] == names[2], "the layer sequence must not depend on T"
        layers = []
        for per_t in zip(*(ls for ls, _ in traced)):
            x = per_t[0]
            layers.append({k: (_symbolic([l[k] for l in per_t], ts) if isinstance(v, int) and not isinstance(v, bool)
                               else v) for k, v in x.items()})
        in_bytes = _symbolic([sum(_numel(t.shape) * t.element_size() for t in a if isinstance(t, torch.Tensor))
                              for a in args], ts)
        out_elems = _symbolic([sum(_numel(o.shape) for o in outs) for _, outs in traced], ts)

    sparse = set()
    for mname, mod in model.named_modules():
        if isinstance(mod, nn.Embedding) and mod.sparse:
            sparse.add(id(mod.weight))
    lines = [f"# {name}: gradsync model file (models/README.md), written by tools/export_model.py.",
             "format: gradsync-model/1", f"name: {name}"]
    if description:
        lines.append(f"description: {_q(description)}")
    if source:
        lines.append(f"source: {_q(source)}")
    lines.append("defaults:")
    lines.append(f"  batch: {batch}")
    if seq_len is not None:
        lines.append(f"  seq_len: {seq_len}")
    lines.append("input:")
    lines.append(f"  what: {_q(input_what or 'input')}")
    lines.append(f"  bytes: {_v(in_bytes)}")
    lines.append("output:")
    lines.append(f"  what: {_q(output_what or 'output')}")
    lines.append(f"  elements: {_v(out_elems)}")
    lines.append(f"  loss: {'inside' if loss_inside else 'outside'}")
    lines.append("parameters:")
    for pname, p in model.named_parameters():
        extra = ""
        if p.dtype != torch.float32:
            extra += f", dtype: {DTYPE_NAMES[p.dtype]}"
        if not p.requires_grad:
            extra += ", requires_grad: false"
        if id(p) in sparse:
            extra += ", sparse_grad: true"
        lines.append(f"  - {{name: {pname}, shape: [{', '.join(str(int(d)) for d in p.shape)}]{extra}}}")
    bufs = list(model.named_buffers())
    if bufs:
        lines.append("buffers:")
        for bname, b in bufs:
            lines.append(f"  - {{name: {bname}, shape: [{', '.join(str(int(d)) for d in b.shape)}], "
                         f"dtype: {DTYPE_NAMES[b.dtype]}}}")
    if unused:
        lines.append("unused_parameters: [" + ", ".join(unused) + "]")
    lines.append("layers:")
    for l in layers:
        fields = ", ".join(f"{k}: {_v(v)}" for k, v in l.items() if k not in ("name", "kind", "params"))
        params = ", ".join(l["params"])
        lines.append(f"  - {{name: {l['name']}, kind: {l['kind']}, params: [{params}]" + (f", {fields}" if fields else "") + "}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def _q(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _v(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str) and not all(ch in "0123456789T*+-" for ch in v):
        return _q(v)
    return str(v)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="torchvision:NAME (e.g. torchvision:resnet50)")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--name")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--image-size", type=int, default=224)
    a = ap.parse_args(argv)
    kind, _, mname = a.model.partition(":")
    if kind != "torchvision":
        ap.error(f"unknown model source '{kind}' (expected torchvision:NAME)")
    import torchvision
    model = getattr(torchvision.models, mname)()
    s = a.image_size
    export(model, lambda t: (torch.zeros(1, 3, s, s),), a.name or mname, a.output, a.batch,
           description=f"torchvision.models.{mname}()", source="torchvision", input_what=f"image 3x{s}x{s} float32",
           output_what="logits", loss_inside=False)


if __name__ == "__main__":
    main(sys.argv[1:])
