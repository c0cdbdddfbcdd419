#!/usr/bin/env python3
"""export_model.py: write a gradsync model file (models/README.md) from any torch.nn.Module.

    from export_model import export
    export(model, example_input_fn, name="mynet", path="mynet.yaml", batch=32, seq_len=None)

or from the command line for torchvision models:

    python3 tools/export_model.py torchvision:resnet50 -o resnet50.yaml --batch 32

What it records:
  * parameters in model.parameters() registration order (tied parameters once, under their first
    name), with shape, dtype, requires_grad and whether the owning Embedding has sparse=True;
    trainable ones that forward never reads are listed as unused_parameters (pass unused=[...] for
    those it reads but whose result does not reach the loss);
  * buffers (named_buffers(), persistent or not: DP replicates and DDP broadcasts them all);
  * layers in forward execution order, from forward hooks on leaf modules (a module called twice
    gives two layers, the second named NAME:2), with the parameters each uses and the shapes the
    cost model needs, per sample. Modules may describe themselves with a method
    gradsync_layers(inputs, output) returning a list of layer dicts.
  * per layer, the view calls its forward makes (views: [calls, calls on a tensor that requires
    grad, each adding a backward node]): host time in an eager step, no kernel;
  * per-sample input and output bytes. For sequence models (seq_len given) the model is traced at two
    sequence lengths and every number that grows with T is written as an expression "c*T" or "c*T*T".

Functional operations outside modules (a residual `x + y` in torchvision's ResNet, softmax, masks, the
loss) are recorded too: as ops of an `fn` segment of the module that calls them.
Needs torch (Debian: python3-torch); meta-device models work, so large models need no memory.
"""
import argparse
import contextlib
import sys

import torch
import torch.nn as nn

from export_records import generalise_layers, records, symbolic

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
        # The layer description holds a square kernel and stride; any other convolution (1x7,
        # strides (2, 1)) is described by its recorded ops alone, as Conv1d and Conv3d are.
        if mod.kernel_size[0] != mod.kernel_size[1] or mod.stride[0] != mod.stride[1]:
            raise ValueError(f"export_model: {type(mod).__name__} of kernel {mod.kernel_size}, stride {mod.stride}: "
                             "not square; described by its ops")
        # padding="same" or "valid" (PyTorch 1.9+): the padding those words make at stride 1.
        if isinstance(mod.padding, str):
            padding = 0 if mod.padding == "valid" else mod.dilation[0] * (mod.kernel_size[0] - 1) // 2
        else:
            padding = mod.padding[0]
        return [{"kind": "conv2d", "in": mod.in_channels, "out": mod.out_channels, "kernel": mod.kernel_size[0],
                 "stride": mod.stride[0], "padding": padding, "groups": mod.groups,
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


GEMM_OPS = {"mm", "addmm", "bmm", "baddbmm", "convolution", "_convolution"}
LOSS_OPS = {"nll_loss_forward", "nll_loss2d_forward", "binary_cross_entropy", "binary_cross_entropy_with_logits",
            "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div"}


def _batch2(args):
    """The forward's arguments for two samples: every tensor doubled along its first dimension."""
    return tuple(torch.cat([a, a]) if isinstance(a, torch.Tensor) and a.dim() > 0 else a for a in args)


def _describe_leaves(model):
    """Forward hooks on leaf modules that describe each call (kind and dims, per sample)."""
    descriptions, handles, calls = {}, [], {}
    names = {}
    for mname, mod in model.named_modules():
        if _is_leaf(mod) and mname:
            names[id(mod)] = mname

    def hook(mod, inputs, output):
        n = names.get(id(mod))
        if n is None:
            return
        calls[n] = calls.get(n, 0) + 1
        try:
            d = describe_module(mod, inputs, output)
        except ValueError:
            d = []
        descriptions[(n, calls[n])] = d[0] if len(d) == 1 and "params" not in d[0] else None
    handles.append(nn.modules.module.register_module_forward_hook(hook))
    return descriptions, handles


def trace(model, example_input):
    """One forward of batch `example_input`: its layers (with their ops) and output tensors."""
    from op_trace import trace_forward
    canonical = {}
    for pname, p in model.named_parameters():
        canonical.setdefault(id(p), pname)
    pnames = [n for n, _ in model.named_parameters()]
    descriptions, handles = _describe_leaves(model)
    try:
        run = trace_forward(model, example_input)
    finally:
        for h in handles:
            h.remove()
    modules = dict(model.named_modules())
    layers, fn_count = [], {}
    index_of = {}  # run layer index -> output layer index
    for j, rl in enumerate(run.layers):
        ops = [o for o in run.ops if o["layer"] == j]
        if not ops:
            continue
        m, call = rl["module"], rl["call"]
        base = m if call == 1 else f"{m}:{call}"
        desc = descriptions.get((m, call)) if rl["leaf"] else None
        if rl["leaf"]:
            name = base
            own = [canonical[id(p)] for p in modules[m].parameters()] if m in modules else []
            params = list(dict.fromkeys(own))
        else:
            fn_count[base] = fn_count.get(base, 0) + 1
            k = fn_count[base]
            suffix = "fn" if k == 1 else f"fn{k}"
            name = f"{base}.{suffix}" if base else suffix
            params = []
        read = [pnames[int(r[1:])] for o in ops for r, _, _ in o["in"] if r.startswith("p")]
        for pn in read:
            if pn not in params:
                params.append(pn)
        if desc is not None:
            kind = desc.pop("kind")
            dims = desc
        else:
            kind = "loss" if any(o["op"] in LOSS_OPS for o in ops) else "ops"
            dims = {}
        index_of[j] = len(layers)
        layers.append({"name": name, "kind": kind, "params": params, "dims": dims, "ops": ops,
                       "saved": [s for s in run.saved if s[0] == j]})
    # Names produced twice (a leaf called by two parents) get :2, :3.
    seen = {}
    for l in layers:
        if l["name"] in seen:
            seen[l["name"]] += 1
            l["name"] = f"{l['name']}:{seen[l['name']]}"
        else:
            seen[l["name"]] = 1
    _attention_groups(run.ops)
    return layers, run, _all_tensors(run.output)


def _triangular_mask(ops, chain, scores):
    """Whether an op on the scores adds or applies a mask made by tril/triu (an additive causal
    mask, as torch 1.13's F._scaled_dot_product_attention(is_causal=True) and transformers'
    _make_causal_mask build it): the producers of the chain's other inputs, a few ops back."""
    seen = set()
    todo = [r for c in chain for r, _, _ in ops[c]["in"] if r.startswith("o") and r not in scores]
    while todo:
        r = todo.pop()
        j = int(r[1:].split(".")[0])
        if j in seen or len(seen) > 16:
            continue
        seen.add(j)
        if ops[j]["op"] in ("tril", "triu", "tril_", "triu_"):
            return True
        todo.extend(x for x, _, _ in ops[j]["in"] if x.startswith("o"))
    return False


def _attention_groups(ops):
    """Mark the ops of each attention core: a bmm of queries and keys (scores q x kv), the ops on
    the scores (scale, mask, softmax, dropout), the bmm of probabilities and values, and the copies
    that made q, k or v contiguous for the products. flash and mem-efficient attention replace them
    with one kernel (the file marks them `attn: g`; the first bmm carries `attention:` [heads, q,
    kv, head_dim, causal])."""
    group = 0
    for a, op in enumerate(ops):
        if op["op"] not in ("bmm", "baddbmm") or "attn" in op:
            continue
        scores = {f"o{a}"}
        size = op["out"][0][0]
        chain = []
        end = None
        for b in range(a + 1, min(len(ops), a + 40)):
            refs = [r for r, _, _ in ops[b]["in"]]
            if ops[b]["op"] in ("bmm", "baddbmm") and refs and scores.intersection(refs):
                end = b
                break
            if any(r in scores for r in refs) and ops[b]["out"] and ops[b]["out"][0][0] == size:
                chain.append(b)
                scores.update(f"o{b}" if i == 0 else f"o{b}.{i}" for i in range(len(ops[b]["out"])))
        if end is None:
            continue
        members = [a] + chain + [end]
        # Copies feeding only the two products (q, k, v made contiguous for the math path) and masks
        # made for the scores alone (nanoGPT's tril buffer compared with 0): the fused kernels need
        # neither.
        for c in range(max(0, a - 8), end):
            if c in members or ops[c]["op"] in GEMM_OPS:
                continue
            outs = {f"o{c}" if i == 0 else f"o{c}.{i}" for i in range(len(ops[c]["out"]))}
            readers = [m for m in range(c + 1, len(ops)) if any(r in outs for r, _, _ in ops[m]["in"])]
            if readers and all(m in members for m in readers) and \
                    (ops[c]["op"] == "clone" or all(r.startswith("b") for r, _, _ in ops[c]["in"])):
                members.append(c)
        for m in members:
            ops[m]["attn"] = group
        batch, q, kv, d = op["gemm"]
        causal = any(ops[c]["op"] == "masked_fill" for c in chain) or _triangular_mask(ops, chain, scores)
        op["attention"] = [batch, q, kv, d, causal]
        group += 1


@contextlib.contextmanager
def _in_train_mode(model):
    """Trace `model` as a training step runs it, and give it back as it came: each module's mode
    and every buffer (BatchNorm's running statistics, which the traced forwards update). A model
    in eval mode (Hugging Face's from_pretrained returns it so) is traced in train mode, said on
    stderr: traced in eval mode it lost its dropout (until 2026-12-02). A model in train mode is
    traced as it is, parts a script put in eval mode (frozen BatchNorm statistics) included."""
    modes = [(m, m.training) for m in model.modules()]
    with torch.no_grad():
        buffers = [(b, b.detach().clone()) for b in model.buffers()]
    if not model.training:
        print("export_model: the model is in eval mode; traced in train mode (dropout, batch statistics), as a "
              "training step runs it, and left in eval mode", file=sys.stderr)
        model.train()
    try:
        yield
    finally:
        for m, training in modes:
            m.training = training
        with torch.no_grad():
            for b, value in buffers:
                b.copy_(value)


def export(model, example_input_fn, name, path, batch, seq_len=None, description="", source="",
           output_what="", input_what="", loss_inside=False, unused=()):
    """Trace `model` and write its gradsync model file (format 2: layers and their aten ops) to
    `path`.

    example_input_fn(T) returns the forward's positional arguments for batch 1 (T is None for
    models without a sequence length); batches 2 and 4, which are traced, double them. The output's elements
    are recorded; their bytes follow the run's precision, so outputs are written as elements,
    inputs as bytes.
    """
    ts = (8, 16, 32) if seq_len is not None else ()
    configs = [example_input_fn(t) for t in ts] if ts else [example_input_fn(None)]
    # Traced at batch 2 and 4: matmul copies non-contiguous operands only when the batch is above 1
    # (a dimension of one sample reshapes as a view), and training batches are.
    with _in_train_mode(model):
        traced = [trace(model, _batch2(a)) for a in configs]
        traced2 = trace(model, _batch2(_batch2(configs[0])))
    recs = [records(layers) for layers, _, _ in traced]
    record2 = records(traced2[0])
    shapes = [[(l["name"], [o["op"] for o in l["ops"]]) for l in r] for r in recs + [record2]]
    for other in shapes[1:]:
        if other != shapes[0]:
            raise ValueError("export_model: the layers or their ops depend on the sequence length or the batch; "
                             "the model file describes one sequence of ops")
    layers = generalise_layers(recs, ts, record2)
    outs = [o for _, _, o in traced]
    if ts:
        in_bytes = symbolic([sum(_numel(t.shape) * t.element_size() for t in a if isinstance(t, torch.Tensor))
                              for a in configs], ts)
        out_elems = symbolic([sum(_numel(o.shape) for o in os_) // 2 for os_ in outs], ts)
    else:
        in_bytes = sum(_numel(a.shape) * a.element_size() for a in configs[0] if isinstance(a, torch.Tensor))
        out_elems = sum(_numel(o.shape) for o in outs[0]) // 2
    input_dtypes = [DTYPE_NAMES[a.dtype] for a in configs[0] if isinstance(a, torch.Tensor)]
    # Outputs that do not grow with the batch (a scalar loss returned by forward) are no sample's:
    # `elements` counts per sample; the rest is said in a comment, not lost in the division.
    at2 = sum(_numel(o.shape) for o in outs[0])
    at4 = sum(_numel(o.shape) for o in traced2[2])
    fixed_elems = at2 - (at4 - at2)

    sparse = set()
    for mname, mod in model.named_modules():
        if isinstance(mod, nn.Embedding) and mod.sparse:
            sparse.add(id(mod.weight))
    lines = [f"# {name}: gradsync model file (models/README.md), written by tools/export_model.py.",
             "format: gradsync-model/2", f"name: {name}"]
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
    lines.append(f"  dtypes: [{', '.join(input_dtypes)}]")
    lines.append("output:")
    lines.append(f"  what: {_q(output_what or 'output')}")
    lines.append(f"  elements: {_v(out_elems)}" +
                 (f"  # per sample; plus {fixed_elems} that do not grow with the batch (a scalar loss)"
                  if fixed_elems > 0 else ""))
    # A forward that returns only a scalar (its loss) has nothing per sample for a loss outside it.
    if not loss_inside and out_elems == 0 and fixed_elems > 0:
        print("export_model: forward returns a scalar and nothing per sample: its loss; written as loss: inside "
              "(loss_inside=True)", file=sys.stderr)
        loss_inside = True
    lines.append(f"  loss: {'inside' if loss_inside else 'outside'}")
    lines.append("parameters:" if any(True for _ in model.parameters()) else "parameters: []")
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
            # A module's gradsync_math_attention_buffers: buffers it registers only when it runs its
            # own (math) attention, as nanoGPT's causal mask.
            owner, _, leaf = bname.rpartition(".")
            module = model.get_submodule(owner) if owner else model
            math_only = leaf in getattr(module, "gradsync_math_attention_buffers", ())
            lines.append(f"  - {{name: {bname}, shape: [{', '.join(str(int(d)) for d in b.shape)}], "
                         f"dtype: {DTYPE_NAMES[b.dtype]}{', attention: math' if math_only else ''}}}")
    # A trainable parameter that no layer's forward reads gets no gradient: DDP needs
    # find_unused_parameters (or static_graph) for it, and the file must say so. `unused` adds those
    # that forward reads but that do not reach the loss (a branch whose output is dropped).
    used = {pn for l in layers for pn in l["params"]}
    never_read = [pn for pn, p in model.named_parameters() if p.requires_grad and pn not in used]
    unused = list(dict.fromkeys(list(unused) + never_read))
    if unused:
        lines.append("unused_parameters: [" + ", ".join(unused) + "]")
    lines.append("layers:")
    for l in layers:
        fields = "".join(f", {k}: {_v(v)}" for k, v in l["dims"].items())
        if "views" in l:
            fields += f", views: {_flow(l['views'])}"
        lines.append(f"  - {{name: {l['name']}, kind: {l['kind']}, params: [{', '.join(l['params'])}]{fields},")
        lines.append("     ops: [")
        for o in l["ops"]:
            lines.append(f"       {_op_text(o)},")
        saved = ", ".join(_flow(s) for s in l["saved"])
        lines.append(f"     ], saved: [{saved}]}}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def _flow(x):
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(_flow(y) for y in x) + "]"
    return _v(x)


def _op_text(o):
    parts = [f"op: {o['op']}", f"in: {_flow(o['in'])}", f"out: {_flow(o['out'])}"]
    for k in ("flops", "gemm", "conv", "attn", "attention"):
        if k in o:
            parts.append(f"{k}: {_flow(o[k])}")
    return "{" + ", ".join(parts) + "}"


def _q(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _v(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str) and not all(ch in "0123456789TB*+-()" for ch in v):
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
