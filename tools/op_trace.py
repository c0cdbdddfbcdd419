"""op_trace.py: the aten operations of one forward, as gradsync's model format 2 records them.

    from op_trace import trace_forward
    run = trace_forward(model, args)     # args: the forward's positional arguments (meta tensors)
    run.ops[i]     # {"op", "layer", "in": [(ref, elements, bytes_per_elem or None)], "out": [...], ...}
    run.layers[j]  # {"module", "call", "segment", "leaf"}: the module run an op belongs to

A TorchDispatchMode sees every aten operation below autograd (on the meta device nothing is
computed or allocated). Views (schema returns that alias an input without writing it: view,
transpose, split, expand, ...) launch no kernel: their outputs stand for the tensor they view.
Every other operation is one kernel and is recorded with

  * its layer: the module call it ran in, a leaf module's call, or a run of functional ops of a
    non-leaf module between two of its children's calls (module stack from global forward hooks);
  * its inputs: which op produced each ("o12", "o12.1" for a second output), a parameter ("p3",
    model.parameters() order), a buffer ("b0"), a model input ("x0"), and how many elements of it
    the op reads (a view of part of a tensor reads that part);
  * its outputs' element counts (and bytes per element of integer and boolean outputs: a float
    output's size follows the run's precision under autocast, which gradsync applies);
  * FLOPs of matrix products (mm, addmm, bmm, baddbmm: 2 m n k per product) and convolutions (2 x
    the multiply-adds), with their shapes;
  * the tensors autograd saves for backward (torch.autograd.graph.saved_tensors_hooks), by source,
    with the op that saved them;
  * the view calls made since the kernel before it ("views": [calls, calls on a tensor that
    requires grad]): no kernel, but host time in an eager step, in forward and, through the
    backward node each view of a tensor requiring grad adds (ViewBackward0, TransposeBackward0,
    ...), in backward. Views after the last kernel go to the last kernel.

On the meta device PyTorch runs dropout as empty_like + bernoulli_ + div_ + mul; CUDA runs one
fused native_dropout kernel writing the output and a boolean mask, and that is what is recorded.
"""
import torch
import torch.nn as nn
from torch.utils._python_dispatch import TorchDispatchMode

# Operations that launch no kernel (allocation without initialisation, autograd bookkeeping).
NO_KERNEL = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "detach", "lift_fresh",
             "alias", "_unsafe_view", "_reshape_alias"}
# Of those, the allocations and the tracer's own lifting of constants are not view calls.
NOT_VIEW_CALLS = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "lift_fresh"}
GEMMS = {"mm", "addmm", "bmm", "baddbmm"}
CONVS = {"convolution", "_convolution"}


def _numel(t):
    n = 1
    for d in t.shape:
        n *= int(d)
    return n


def _tensors(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        out = []
        for y in x:
            out += _tensors(y)
        return out
    return []


def _is_float(t):
    """A floating-point tensor whose size follows the run's precision (autocast casts it): float32,
    float16, bfloat16. float64 is written with its 8 bytes: autocast never casts it (until
    2026-12-02 an fp64 layer was sized as the run's precision, half of it in fp32)."""
    return t.dtype.is_floating_point and t.dtype != torch.float64


class Run:
    def __init__(self):
        self.ops = []       # recorded kernels, forward order
        self.layers = []    # {"module", "call", "segment", "leaf"}
        self.saved = []     # (layer, ref, elements, bytes_per_elem or None, saver op index)


class _Recorder(TorchDispatchMode):
    def __init__(self, run, refs, keep, current_layer):
        super().__init__()
        self.run, self.refs, self.keep, self.current_layer = run, refs, keep, current_layer
        self.masks = {}  # id(bernoulli_'s tensor) -> True while a dropout is being recognised
        self.views = [0, 0]  # view calls since the last recorded kernel: all, on a tensor requiring grad

    def _ref(self, t):
        return self.refs.get(id(t), "c")

    def _bind(self, t, ref):
        self.refs[id(t)] = ref
        self.keep.append(t)

    def _take_views(self, rec):
        if self.views[0]:
            rec["views"] = list(self.views)
            self.views = [0, 0]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        schema = func._schema
        outs = _tensors(out)
        aliases = [r.alias_info for r in schema.returns]
        ins = _tensors(list(args) + list(kwargs.values()))
        # Views: the output stands for what it views.
        if aliases and all(a is not None and not a.is_write for a in aliases) or name in NO_KERNEL:
            src = ins[0] if ins else None
            if name not in NOT_VIEW_CALLS:
                self.views[0] += 1
                self.views[1] += int(src is not None and src.requires_grad)
            for o in outs:
                if src is not None and name not in ("empty", "empty_like", "empty_strided", "new_empty",
                                                    "new_empty_strided"):
                    self._bind(o, self._ref(src))
                else:
                    self._bind(o, "c")
            return out
        # Dropout on the meta device: bernoulli_ fills a mask, div_ scales it, mul applies it.
        if name == "bernoulli_":
            # The mask becomes the second output of the dropout op recorded at the next mul.
            self.masks[id(ins[0])] = True
            self._bind(ins[0], f"o{len(self.run.ops)}.1")
            return out
        if name == "div_" and id(ins[0]) in self.masks:
            return out
        if name == "mul" and len(ins) == 2 and any(id(t) in self.masks for t in ins):
            mask = ins[0] if id(ins[0]) in self.masks else ins[1]
            x = ins[1] if mask is ins[0] else ins[0]
            idx = len(self.run.ops)
            self.run.ops.append({"op": "native_dropout", "layer": self.current_layer(),
                                 "in": [(self._ref(x), _numel(x), None)],
                                 "out": [(_numel(outs[0]), None), (_numel(outs[0]), 1)]})
            self._take_views(self.run.ops[-1])
            self._bind(outs[0], f"o{idx}")
            self._bind(mask, f"o{idx}.1")
            del self.masks[id(mask)]
            return out
        idx = len(self.run.ops)
        rec = {"op": name, "layer": self.current_layer(),
               "in": [(self._ref(t), _numel(t), None if _is_float(t) else t.element_size()) for t in ins],
               "out": [(_numel(o), None if _is_float(o) else o.element_size()) for o in outs]}
        if name in GEMMS:
            a, b = (args[1], args[2]) if name in ("addmm", "baddbmm") else (args[0], args[1])
            if name in ("mm", "addmm"):
                m, k, n, batch = int(a.shape[0]), int(a.shape[1]), int(b.shape[1]), 1
            else:
                batch, m, k, n = int(a.shape[0]), int(a.shape[1]), int(a.shape[2]), int(b.shape[2])
            rec["gemm"] = [batch, m, n, k]
            rec["flops"] = 2 * batch * m * n * k
        elif name in CONVS:
            rec["conv"], rec["flops"] = _conv_record(args, outs[0])
        self.run.ops.append(rec)
        self._take_views(rec)
        writes = [a is not None and a.is_write for a in aliases]
        for i, o in enumerate(outs):
            self._bind(o, f"o{idx}" if i == 0 else f"o{idx}.{i}")
        # An in-place op's result is its first argument, now written by this op.
        if any(writes) and ins:
            self._bind(ins[0], f"o{idx}")
        return out


def _conv_record(args, y):
    """aten::convolution's (input, weight, bias, stride, padding, dilation, transposed, output_padding,
    groups) as the model format's conv record [in, height, width, out, kernel h, kernel w, stride,
    padding, groups] and its FLOPs (2 x the multiply-adds), for 1, 2 or 3 spatial dimensions.

    A convolution multiplies each output element by in/groups x taps weights (taps: the kernel's
    elements); a transposed one (ConvTranspose*d: weight [in, out/groups, kernel...]) each input
    element by out/groups x taps. Conv1d is recorded as height 1, Conv3d with depth folded into
    height (depth x height, and the kernel's likewise); stride and padding are the first dimension's.
    """
    x, w = args[0], args[1]
    transposed = bool(args[6]) if len(args) > 6 else False
    groups = int(args[8]) if len(args) > 8 else 1
    kernel = [int(d) for d in w.shape[2:]]
    spatial = [int(d) for d in x.shape[2:]]
    taps = 1
    for k in kernel:
        taps *= k
    if transposed:
        cin, cout = int(w.shape[0]), int(w.shape[1]) * groups
        flops = 2 * _numel(x) * int(w.shape[1]) * taps
    else:
        cin, cout = int(w.shape[1]) * groups, int(w.shape[0])
        flops = 2 * _numel(y) * int(w.shape[1]) * taps

    def fold(dims):
        lead = 1
        for d in dims[:-1]:
            lead *= d
        return lead, dims[-1]

    height, width = fold(spatial)
    kh, kw = fold(kernel)
    stride, padding = args[3], args[4]
    stride = int(stride[0]) if isinstance(stride, (list, tuple)) else int(stride)
    padding = int(padding[0]) if isinstance(padding, (list, tuple)) else (int(padding) if isinstance(padding, int) else 0)
    return [cin, height, width, cout, kh, kw, stride, padding, groups], flops


def _leaf(mod):
    return len(list(mod.children())) == 0 or isinstance(mod, nn.MultiheadAttention)


def trace_forward(model, args):
    """One forward of `model` on `args` (meta tensors), recorded."""
    run = Run()
    refs, keep = {}, []
    for k, (_, p) in enumerate(model.named_parameters()):
        refs.setdefault(id(p), f"p{k}")
    for j, (_, b) in enumerate(model.named_buffers()):
        refs.setdefault(id(b), f"b{j}")
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            refs[id(a)] = f"x{i}"
    names = {id(m): n for n, m in model.named_modules()}
    calls = {}
    stack = []  # [module name, call number, segment, leaf]

    def current_layer():
        top = stack[-1] if stack else ["", 1, 0, False]
        key = (top[0], top[1], top[2])
        if not run.layers or run.layers[-1]["key"] != key:
            run.layers.append({"key": key, "module": top[0], "call": top[1], "segment": top[2], "leaf": top[3]})
        return len(run.layers) - 1

    def pre(mod, inputs):
        if id(mod) not in names:
            return
        n = names[id(mod)]
        calls[n] = calls.get(n, 0) + 1
        if stack:
            stack[-1][2] += 1  # the parent's functional ops after this call are a new segment
        stack.append([n, calls[n], 0, _leaf(mod)])

    def post(mod, inputs, output):
        if id(mod) not in names:
            return
        stack.pop()
        if stack:
            stack[-1][2] += 1

    pending = []  # (ops recorded so far, ref, elements, bytes per element): saves resolved below

    def pack(t):
        ref = refs.get(id(t), "c")
        if not ref.startswith("p"):  # a parameter (or its view) is the model's, not an activation
            pending.append((len(run.ops), ref, _numel(t), None if _is_float(t) else t.element_size()))
        return t

    h1 = nn.modules.module.register_module_forward_pre_hook(pre)
    h2 = nn.modules.module.register_module_forward_hook(post)
    recorder = _Recorder(run, refs, keep, current_layer)
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), recorder:
            out = model(*args)
    finally:
        h1.remove()
        h2.remove()
    # Autograd saves an op's inputs before running it and its outputs after: the saver is the
    # first op from that point on that reads the tensor, else the op that just wrote it.
    seen = set()
    for pos, ref, n, b in pending:
        if ref == "c" or ref in seen:
            continue  # a tensor saved by two ops is held once
        produced = int(ref[1:].split(".")[0]) if ref.startswith("o") else -1
        if produced >= pos:
            saver = produced  # an output of the op about to be recorded (a dropout's mask)
        else:
            saver = next((j for j in range(pos, len(run.ops)) if any(r == ref for r, _, _ in run.ops[j]["in"])),
                         pos - 1)
        if saver < 0:
            continue
        seen.add(ref)
        if produced >= 0:  # the producer's record says what it wrote (a dropout's mask is boolean)
            k = int(ref.split(".")[1]) if "." in ref else 0
            b = run.ops[produced]["out"][k][1]
        run.saved.append((run.ops[saver]["layer"], ref, n, b, saver))
    if recorder.views[0] and run.ops:  # views after the last kernel (the loss's reshapes)
        last = run.ops[-1].setdefault("views", [0, 0])
        last[0] += recorder.views[0]
        last[1] += recorder.views[1]
    run.output = out
    run.refs = refs
    return run
