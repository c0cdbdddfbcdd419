// advice.cpp: the changes to try, in PyTorch's, torchrun's and NCCL's words, and their ranking.
#include "core/advice.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string_view>

#include "core/nccl_release.hpp"
#include "core/pytorch_version.hpp"
#include "core/scenario_keys.hpp"

namespace gradsync {
namespace {

using json = nlohmann::ordered_json;

// mib_text: a bucket size as DDP's argument takes it (25, 6.25).
std::string mib_text(double mib) { return fmt::format("{:g}", mib); }

Change change(std::string what, std::vector<std::pair<std::string, std::string>> keys, std::string pytorch,
              std::string alters = {}) {
  Change c;
  c.what = std::move(what);
  c.keys = std::move(keys);
  c.pytorch = std::move(pytorch);
  c.alters = std::move(alters);
  return c;
}

// steady_from_iteration_3: a change whose steady state starts at iteration 3 (static_graph's
// rebuilt buckets, PowerSGD's compression from start_iter 2) is simulated with its steady mean from
// there, whatever the run's warm-up.
void steady_from_iteration_3(const Scenario& s, Change& c) {
  if (s.warmup >= 2) return;
  c.keys.push_back({"warmup", "2"});
  if (s.iterations < 3) c.keys.push_back({"iterations", "3"});
}

// ddp_changes: DistributedDataParallel's own options, its comm hooks and no_sync accumulation.
void ddp_changes(const Scenario& s, const ModelTraits& traits, std::vector<Change>& out) {
  // Only what the script's release can call (core/pytorch_version.hpp).
  const PytorchVersion v = parse_pytorch_version(s.pytorch_version);
  // Bucket caps around PyTorch's default 25 MiB, as PyTorch's DDP benchmark and DDP's docs try
  // them: smaller buckets start the first allreduce sooner, larger ones make fewer calls.
  const double cap = s.bucket_cap_mb.value_or(25);
  for (double mib : {5.0, 10.0, 50.0, 100.0}) {
    if (std::abs(mib - cap) < 1e-9) continue;
    out.push_back(change(fmt::format("bucket_cap_mb {}", mib_text(mib)), {{"bucket_cap_mb", mib_text(mib)}},
                         fmt::format("DDP(model, bucket_cap_mb={})", mib_text(mib))));
  }
  if (s.find_unused_parameters) {
    // The autograd graph walk after each forward and the used-parameter map's allreduce go.
    out.push_back(change("find_unused_parameters off", {{"find_unused_parameters", "false"}},
                         "DDP(model, find_unused_parameters=False)",
                         "DDP raises an error if a parameter gets no gradient in an iteration"));
  }
  // Not with no_sync() accumulation, which DDP's static graph fails on (sim/resolved.hpp).
  if (!s.static_graph && !s.find_unused_parameters && s.grad_accum == 1 && has_static_graph(v)) {
    // static_graph rebuilds the buckets for iteration 3, not 2 (core/bucket_plan.hpp): its steady
    // mean starts there, whatever the run's warm-up, so that iteration 2's constructed buckets
    // are not taken for its steady state.
    Change sg = change("static_graph", {{"static_graph", "true"}}, static_graph_call(v));
    steady_from_iteration_3(s, sg);
    out.push_back(sg);
  }
  if (!s.gradient_as_bucket_view && has_gradient_as_bucket_view(v)) {
    out.push_back(change("gradient_as_bucket_view", {{"gradient_as_bucket_view", "true"}},
                         "DDP(model, gradient_as_bucket_view=True)"));
  }
  if (s.allreduce_after_backward) {
    // The buckets' allreduces overlap backward again, DDP's reason to bucket at all.
    out.push_back(change("allreduce overlapping backward", {{"allreduce_after_backward", "false"}},
                         "DDP(model) alone: no delay_allreduce, no no_sync() with a manual allreduce"));
  }
  if (s.broadcast_buffers) {
    out.push_back(change("broadcast_buffers off", {{"broadcast_buffers", "false"}},
                         "DDP(model, broadcast_buffers=False)",
                         traits.batchnorm ? "each rank keeps its own BatchNorm running statistics" : ""));
  }
  if (s.comm_hook == "none" && has_comm_hooks(v)) {
    // A 16-bit model's gradients are in its own dtype already: the hook of that dtype averages them
    // as they are, and alters nothing.
    const std::string gradients = s.mixed_precision == "master-weights" ? s.precision : "fp32";
    const auto averaged_in = [&](const char* dtype) {
      return gradients == dtype ? std::string() : fmt::format("gradients are averaged in {}", dtype);
    };
    if (has_bf16_comm_hook(v)) {
      out.push_back(change("comm hook bf16", {{"comm_hook", "bf16"}},
                           "model.register_comm_hook(None, default_hooks.bf16_compress_hook)", averaged_in("bf16")));
    }
    out.push_back(change("comm hook fp16", {{"comm_hook", "fp16"}},
                         "model.register_comm_hook(None, default_hooks.fp16_compress_hook)", averaged_in("fp16")));
    // PowerSGD's steady state: start_iter 2 so that the simulated steady iterations (after the
    // warm-up) run the compressed path that a real run reaches after start_powerSGD_iter.
    Change psgd =
        change("comm hook PowerSGD rank 1 (after its warm-up)", {{"comm_hook", "powersgd:rank=1,start_iter=2"}},
               "model.register_comm_hook(powerSGD_hook.PowerSGDState(None, "
               "matrix_approximation_rank=1, start_powerSGD_iter=1000), powerSGD_hook.powerSGD_hook)  # plain "
               "allreduce for the first 1000 iterations (PowerSGDState's default); the gain is from then on",
               "gradients are compressed to rank 1 (with error feedback)");
    steady_from_iteration_3(s, psgd);  // it compresses from iteration 3, as static_graph rebuilds
    out.push_back(psgd);
  }
  if (s.grad_accum == 1 && !s.static_graph) {
    out.push_back(change("grad_accum 4 with no_sync", {{"grad_accum", "4"}},
                         "with model.no_sync(): loss_fn(model(x), y).backward()  # micro-batches 1-3 of 4; the "
                         "4th outside no_sync() syncs",
                         "4x the global batch per optimizer step"));
  }
}

// nccl_changes: NCCL's environment variables where NCCL's defaults leave a choice, and each one
// the run sets taken away (NCCL's own choice, which a knob set long ago may now beat).
void nccl_changes(const Scenario& s, Strategy strategy, std::vector<Change>& out) {
  // DataParallel is one process, started as `python train.py`, not by torchrun.
  const char* before = strategy == Strategy::kDP ? "before python starts the script" : "before torchrun";
  for (const ScenarioKey& k : scenario_table()) {
    if (!k.nccl) continue;
    const auto v = key_value(s, k);
    if (v.is_null() || v == false) continue;
    out.push_back(change(fmt::format("{} unset", k.name), {{std::string(k.name), kUnsetValue}},
                         fmt::format("unset {}  # NCCL's default", k.name)));
  }
  // NCCL_ALGO and NCCL_PROTO came with NCCL 2.5 (tuning.cc's getenv): 2.4 reads neither.
  const bool reads_algo_proto = resolve_nccl_release(s.nccl_version, s.pytorch_version).at_least(2, 5);
  if (s.nccl_algo.empty() && reads_algo_proto) {
    // Tree serves allreduce across nodes only (NCCL: inside one node it is a chain).
    for (const char* algo : {"Ring", "Tree"}) {
      if (std::string_view(algo) == "Tree" && s.nnodes < 2) continue;
      out.push_back(change(fmt::format("NCCL_ALGO={}", algo), {{"NCCL_ALGO", algo}},
                           fmt::format("export NCCL_ALGO={}  # {}", algo, before)));
    }
  }
  if (s.nccl_proto.empty() && reads_algo_proto) {
    out.push_back(
        change("NCCL_PROTO=Simple", {{"NCCL_PROTO", "Simple"}}, fmt::format("export NCCL_PROTO=Simple  # {}", before)));
  }
  // Fewer channels hold fewer SMs beside backward's kernels (sim/contention); more move more.
  // Each where it is not set: NCCL caps the rings at the maximum and then copies them up to the
  // minimum (connect.cc), so a minimum beside a maximum set still changes the run.
  if (s.nccl_max_nchannels == 0)
    out.push_back(change("NCCL_MAX_NCHANNELS=4", {{"NCCL_MAX_NCHANNELS", "4"}},
                         fmt::format("export NCCL_MAX_NCHANNELS=4  # {}", before)));
  if (s.nccl_min_nchannels == 0)
    out.push_back(change("NCCL_MIN_NCHANNELS=32", {{"NCCL_MIN_NCHANNELS", "32"}},
                         fmt::format("export NCCL_MIN_NCHANNELS=32  # {}", before)));
}

// script_changes: what both strategies' scripts can change: the batch, the optimizer, the input,
// torch.compile, the attention kernel, the memory format.
void script_changes(const Scenario& s, Strategy strategy, const ModelTraits& traits, std::vector<Change>& out) {
  Change batch = change("largest batch that fits", {}, "DataLoader(dataset, batch_size=B)");
  batch.largest_batch = true;
  out.push_back(batch);
  Change micro = change("micro-batches that fit, same global batch", {}, "");
  micro.accumulate_to_fit = true;
  // BatchNorm normalises over each micro-batch: its statistics are over fewer samples.
  if (traits.batchnorm) micro.alters = "BatchNorm's statistics over each micro-batch";
  // DDP accumulates under no_sync(), which its static graph fails on (sim/resolved.hpp).
  if (strategy != Strategy::kDDP || !s.static_graph) out.push_back(micro);
  // A measured step keeps its times whatever the script runs: those changes would all gain 0.
  if (traits.measured) return;
  // fused=True: Adam's from PyTorch 1.13, AdamW's from 2.0 (transformers#22141 on 2.0's release).
  const PytorchVersion v = parse_pytorch_version(s.pytorch_version);
  // The changes that gain most first, so that a tight --advice-budget still tries them: the
  // precision, torch.compile, the attention kernel.
  // A float32 run: TF32 products (one line, the products' mantissa only), then autocast to bf16
  // where the GPU has it, else to fp16 under GradScaler (torch.amp's docs: fp16 gradients underflow
  // without loss scaling). Each changes the maths.
  if (s.precision == "fp32" && s.mixed_precision == "autocast") {
    if (traits.tf32)
      out.push_back(change("TF32 products", {{"precision", "tf32"}},
                           "torch.backends.cuda.matmul.allow_tf32 = True  # torch.set_float32_matmul_precision('high')",
                           "products in TF32 (10 bits of mantissa) instead of float32 (23)"));
    if (traits.bf16)
      out.push_back(change("bf16 autocast", {{"precision", "bf16"}, {"grad_scaler", "false"}},
                           "with torch.autocast('cuda', dtype=torch.bfloat16): loss = model(x) ...",
                           "products, convolutions and their activations in bf16 (8 bits of mantissa)"));
    else if (traits.fp16)
      out.push_back(change("fp16 autocast with GradScaler", {{"precision", "fp16"}, {"grad_scaler", "true"}},
                           "scaler = torch.cuda.amp.GradScaler(); with torch.autocast('cuda', dtype=torch.float16): "
                           "loss = model(x) ...; scaler.scale(loss).backward(); scaler.step(optimizer); "
                           "scaler.update()",
                           "products, convolutions and their activations in fp16 (11 bits of mantissa), the loss "
                           "scaled"));
  }
  // torch.compile does not compile through DataParallel's replica threads (pytorch/pytorch#94636):
  // under DP on several GPUs it would gain nothing (sim/simulate.cpp runs it eager).
  if (!s.compile && has_compile(v) && !(strategy == Strategy::kDP && s.gpus > 1)) {
    out.push_back(change("torch.compile", {{"compile", "true"}}, "model = torch.compile(model)"));
  }
  if (traits.attention && s.attention == "math" && has_sdpa(v)) {
    // The flash kernel takes fp16 and bf16 only, on GPUs that have it; mem-efficient takes fp32
    // too, and every GPU: SDPA's own choice where flash cannot run.
    // A mask other than the causal one goes in as attn_mask, which the flash kernel does not take
    // (PyTorch's SDPA docs; its dispatcher then picks mem-efficient).
    const bool half = s.precision == "bf16" || s.precision == "fp16";
    const char* kernel = half && traits.flash && !traits.masked ? "flash" : "mem-efficient";
    out.push_back(change(fmt::format("{} attention", kernel), {{"attention", kernel}},
                         traits.causal   ? "F.scaled_dot_product_attention(q, k, v, is_causal=True)"
                         : traits.masked ? "F.scaled_dot_product_attention(q, k, v, attn_mask=mask)"
                                         : "F.scaled_dot_product_attention(q, k, v)"));
  }
  const bool fused_exists = s.optimizer == "adam" ? has_fused_adam(v) : has_fused_adamw(v);
  if ((s.optimizer == "adam" || s.optimizer == "adamw") && s.optimizer_impl != "fused" && s.optimizer_impl != "apex" &&
      fused_exists) {
    out.push_back(change(
        "fused optimizer", {{"optimizer_impl", "fused"}},
        fmt::format("torch.optim.{}(model.parameters(), fused=True)", s.optimizer == "adam" ? "Adam" : "AdamW")));
  }
  // A Python loop over the parameters (the default before 2.0) against the multi-tensor kernels:
  // torch.optim._multi_tensor from 1.7, the foreach= argument from 1.12.
  if (s.optimizer != "none" && s.optimizer_impl == "for-loop" && v.at_least(1, 7)) {
    const std::string cls = s.optimizer == "adam" ? "Adam" : s.optimizer == "adamw" ? "AdamW" : "SGD";
    out.push_back(change("foreach optimizer", {{"optimizer_impl", "foreach"}},
                         v.at_least(1, 12) ? fmt::format("torch.optim.{}(model.parameters(), foreach=True)", cls)
                                           : fmt::format("torch.optim._multi_tensor.{}(model.parameters())", cls)));
  }
  if (s.input == "pageable") {
    out.push_back(change("pinned input", {{"input", "pinned"}},
                         "DataLoader(dataset, pin_memory=True); x.to(device, non_blocking=True)"));
  }
  // A loop without zero_grad fills nothing: set_to_none would change nothing there.
  if (s.set_to_none == "false" && s.zero_grad) {
    // Before 1.7 zero_grad() took no argument: scripts set the gradients to None themselves.
    out.push_back(change("zero_grad set_to_none", {{"set_to_none", "true"}},
                         has_set_to_none(v)
                             ? "optimizer.zero_grad(set_to_none=True)"
                             : "for p in model.parameters(): p.grad = None  # zero_grad(set_to_none=True) "
                               "from PyTorch 1.7"));
  }
  // nanoGPT's padding of 50257 to 50304: a multiple of 64 elements meets cuBLAS's 16-byte alignment
  // in every dtype and A100's 128-byte preference (NVIDIA's "Matrix Multiplication Background").
  constexpr int kPad = 64;
  if (traits.vocabulary % kPad != 0 && s.pad_to_multiple_of == 1) {
    const std::int64_t padded = (traits.vocabulary + kPad - 1) / kPad * kPad;
    out.push_back(
        change(fmt::format("vocabulary padded to {}", padded), {{"pad_to_multiple_of", std::to_string(kPad)}},
               fmt::format("model.resize_token_embeddings(len(tokenizer), pad_to_multiple_of={})  # or "
                           "vocab_size={} in the model's config",
                           kPad, padded),
               fmt::format("{} output classes that no token uses join the softmax", padded - traits.vocabulary)));
  }
  // fp16 autocast needs GradScaler (its unscale pass, and the host's wait before the optimizer);
  // bf16 keeps float32's range and runs without one.
  if (traits.bf16 && s.precision == "fp16" && s.mixed_precision == "autocast" && s.grad_scaler == "true") {
    out.push_back(change("bf16 autocast, no GradScaler", {{"precision", "bf16"}, {"grad_scaler", "false"}},
                         "with torch.autocast('cuda', dtype=torch.bfloat16): ...; loss.backward(); "
                         "optimizer.step()  # no GradScaler",
                         "activations in bf16 (8 bits of mantissa) instead of fp16 (11), and no loss scaling"));
  }
  if (traits.convolution && !s.channels_last && has_channels_last(v)) {
    out.push_back(
        change("channels_last", {{"channels_last", "true"}}, "model = model.to(memory_format=torch.channels_last)"));
  }
}

}  // namespace

std::vector<Change> candidate_changes(const Scenario& s, Strategy strategy, const ModelTraits& traits) {
  std::vector<Change> out;
  if (strategy == Strategy::kDP && s.gpus > 1) {
    Change ddp = change("DDP instead of DP", {},
                        fmt::format("model = DDP(model, device_ids=[local_rank])  # torchrun --nproc-per-node {}",
                                    s.nproc_per_node > 0 ? s.nproc_per_node : s.gpus));
    ddp.strategy = Strategy::kDDP;
    out.push_back(ddp);
  }
  // The script's own changes first (the largest gains, so a tight budget still tries them), then
  // DDP's options, then NCCL's.
  script_changes(s, strategy, traits, out);
  if (strategy == Strategy::kDDP && s.gpus > 1) ddp_changes(s, traits, out);
  if (s.gpus > 1) nccl_changes(s, strategy, out);
  return out;
}

void rank_changes(Advice& a) {
  std::stable_sort(a.changes.begin(), a.changes.end(), [](const ChangeResult& x, const ChangeResult& y) {
    const bool xo = x.status == "ok", yo = y.status == "ok";
    if (xo != yo) return xo;
    return xo && x.gain > y.gain;
  });
}

std::vector<const ChangeResult*> advised(const Advice& a) {
  std::vector<const ChangeResult*> out;
  for (const ChangeResult& c : a.changes) {
    if (out.size() == Advice::kShown) break;
    // A run that does not fit: every change that makes it fit is advice, whatever its gain.
    if (c.status == "ok" && (a.oom || c.gain >= Advice::kMinGain)) out.push_back(&c);
  }
  return out;
}

json advice_json(const Advice& a) {
  json j;
  j["strategy"] = std::string(strategy_label(a.strategy));
  j["steady_s"] = a.steady_s;
  j["samples_per_s"] = a.samples_per_s;
  j["oom"] = a.oom;
  if (std::isfinite(a.budget_s))
    j["budget_s"] = a.budget_s;
  else
    j["budget_s"] = nullptr;  // no time budget: every change was simulated
  j["min_gain_frac"] = Advice::kMinGain;
  const std::vector<const ChangeResult*> best = advised(a);
  auto& cs = j["changes"] = json::array();
  for (const ChangeResult& c : a.changes) {
    json keys = json::object();
    for (const auto& [k, v] : c.change.keys) keys[k] = v;
    if (c.change.strategy) keys["strategy"] = std::string(strategy_label(*c.change.strategy));
    json row{{"change", c.change.what},
             {"keys", keys},
             {"pytorch", c.change.pytorch},
             {"alters_maths", c.change.alters.empty() ? json(nullptr) : json(c.change.alters)},
             {"status", c.status}};
    if (c.status == "ok" || c.status == "oom") {
      row["steady_s"] = c.steady_s;
      row["samples_per_s"] = c.samples_per_s;
      row["gain_frac"] = c.gain;
      row["peak_memory_bytes"] = std::llround(c.peak_memory_bytes);
      row["advised"] = std::find(best.begin(), best.end(), &c) != best.end();
    }
    if (!c.error.empty()) row["error"] = c.error;
    cs.push_back(row);
  }
  return j;
}

}  // namespace gradsync
