// import_trace_command.cpp: `gradsync models import-trace TRACE --model M --batch B`: a training
// step the user measured with torch.profiler, as a model file whose times are the measurement.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>
#include <memory>

#include "apps/cli.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/text.hpp"
#include "core/units.hpp"
#include "models/trace_import.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync::apps {
namespace {

struct ImportOptions {
  std::string trace;
  std::string model;
  std::int64_t batch = 0;
  std::int64_t seq_len = 0;
  std::string gpu = kDefaultShowGpu;
  std::string precision = "fp32";
  std::string out;
};

// kTraceLimit: a trace may be larger than other inputs; one larger still is profiled for more than
// import-trace needs.
constexpr InputLimit kTraceLimit{kMaxTraceBytes,
                                 "profile fewer active steps, e.g. schedule(wait=1, warmup=1, active=3), without "
                                 "with_stack and record_shapes, which import-trace does not read"};

void import_trace(const ImportOptions& o) {
  // The trace's name goes into the model file (measured.trace, and a comment), which names no file
  // with control characters: such a name is refused here, not in the file it would write.
  for (char c : o.trace) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      throw UsageError(
          fmt::format("trace {}: the file's name holds a control character (0x{:02x}); expected a "
                      "name without them: rename or link the file",
                      nlohmann::json(o.trace).dump(), static_cast<unsigned char>(c)));
    }
  }
  TraceImport t;
  const Model m = load_model_arg(o.model);  // a zoo name that does not exist is a usage error naming --model
  // The most samples per GPU every other command takes (the scenario key batch_per_gpu).
  constexpr std::int64_t kMostSamples = std::int64_t{1} << 24;
  if (o.batch > kMostSamples)
    throw UsageError(fmt::format("--batch {}: expected an integer from 1 to {}", o.batch, kMostSamples));
  if (o.seq_len > 0) {
    try {
      m.check_seq_len(o.seq_len);
    } catch (const ConfigError& e) {
      throw UsageError(fmt::format("--seq-len {}: {}", o.seq_len, e.what()));
    }
  }
  // The batch (and T) must give sizes the model's expressions hold in 64 bits: said of both flags.
  try {
    m.check_sizes(m.seq_len(o.seq_len > 0 ? std::optional<std::int64_t>(o.seq_len) : std::nullopt), o.batch);
  } catch (const DataError&) {
    throw;
  } catch (const ConfigError& e) {
    throw UsageError(o.seq_len > 0 ? fmt::format("--batch {} --seq-len {}: {}", o.batch, o.seq_len, e.what())
                                   : fmt::format("--batch {}: {}", o.batch, e.what()));
  }
  std::error_code same_ec;
  if (!o.out.empty() && std::filesystem::equivalent(o.out, o.trace, same_ec)) {
    throw UsageError(fmt::format("--out {}: is the trace being read; give the model file another name", o.out));
  }
  // Nor the model it starts from: the written file carries a measured step, which a later import
  // into it refuses (imported_model_text), so the exported model would be lost.
  if (!o.out.empty() && std::filesystem::equivalent(o.out, o.model, same_ec)) {
    throw UsageError(
        fmt::format("--out {}: is the model file being read (--model); give the measured model file "
                    "another name",
                    o.out));
  }
  t.model = o.model;
  t.batch = o.batch;
  t.seq_len = o.seq_len;
  try {
    t.split.gpu = &gpu_spec(o.gpu);
  } catch (const ConfigError& e) {
    throw UsageError(fmt::format("--gpu: {}", e.what()));
  }
  try {
    t.split.precision = parse_precision(o.precision);
    t.split.gpu->peak_flops(t.split.precision);
  } catch (const ConfigError& e) {
    throw UsageError(fmt::format("--precision: {}", e.what()));
  }
  TraceFindings found;
  const MeasuredStep ms = read_profiler_trace(
      gunzip_input(read_input_file(o.trace, "trace", kTraceLimit), o.trace, "trace", kTraceLimit), o.trace, &found);
  // The trace's gradients against the model's parameters: a trace of another model is refused.
  for (std::string& note : check_trace_gradients(found, m, o.trace, o.model)) found.notes.push_back(std::move(note));
  const std::string text = imported_model_text(ms, t);
  parse_model(text, o.out.empty() ? "the imported model" : o.out);  // what it writes must load
  if (o.out.empty()) {
    std::cout << text;
  } else {
    write_file_atomic(o.out, text);
  }
  // With gradient accumulation (prof.step() after each micro-step) the step written is one
  // micro-step and one optimizer step.
  const bool accumulated = ms.optimizer_steps > 0 && ms.optimizer_steps < ms.steps;
  std::cerr << fmt::format(
      "# {}: {}{} on {}, mean step {}{}: forward {}, backward {}, optimizer {}, other {}{}{}\n", o.trace,
      counted(ms.steps, "step"), accumulated ? fmt::format(" ({} with an optimizer step)", ms.optimizer_steps) : "",
      ms.device, human_duration(ms.step_s), accumulated ? " (a micro-step and an optimizer step)" : "",
      human_duration(ms.forward_s), human_duration(ms.backward_s), human_duration(ms.optimizer_s),
      human_duration(ms.other_s), ms.optimizer.empty() ? "" : fmt::format("; optimizer {}", ms.optimizer),
      o.out.empty() ? "" : fmt::format("; wrote {}", o.out));
  for (const std::string& note : found.notes) std::cerr << "note: " << note << '\n';
  // A CPU's step is imported as it is: runs of the model use its times on whatever GPU they name.
  if (ms.device == "cpu") {
    std::cerr << fmt::format(
        "note: a CPU trace (no CUDA kernels): runs of the model take the CPU's times as measured, whatever GPU the "
        "topology has, and `models show` shows it on {} (--gpu G for another); profile the step on the GPU you will "
        "train on to predict that GPU\n",
        kDefaultShowGpu);
  }
  // torch.optim labels its step (Optimizer.step#<class>.step); an optimizer that does not
  // (DeepSpeed's, a hand-written update) leaves its time in "other", which the simulator places
  // before the first layer, not after backward.
  if (ms.optimizer_s <= 0) {
    std::cerr << "note: no Optimizer.step#... event in the steps: the optimizer's time, if one ran, is counted as "
                 "'other' (an optimizer torch.profiler does not label: DeepSpeed's, a hand-written update)\n";
  }
}

}  // namespace

void register_import_trace_command(CLI::App& models) {
  auto o = std::make_shared<ImportOptions>();
  CLI::App* cmd = models.add_subcommand(
      "import-trace",
      "A training step measured with torch.profiler (export_chrome_trace) as a model file whose forward, backward, "
      "optimizer and other times are the measurement");
  cmd->add_option("trace", o->trace, "The Chrome trace (JSON) of one or more ProfilerStep#N")->required();
  cmd->add_option("--model", o->model, "Zoo name or model file (tools/export_model.py): layers and parameters")
      ->required();
  cmd->add_option("--batch", o->batch, "Samples per step in the trace")->required()->check(kPositiveInteger);
  cmd->add_option("--seq-len", o->seq_len, "T in the trace (sequence models; default: the model's)")
      ->check(kPositiveInteger);
  cmd->add_option("--gpu", o->gpu, "GPU whose roofline splits the measured forward and backward over the layers")
      ->capture_default_str();
  cmd->add_option("--precision", o->precision,
                  "Precision the step ran in: fp32, tf32, bf16 or fp16: that of the split, and the default precision "
                  "of runs of the written model (their memory)")
      ->capture_default_str();
  cmd->add_option("-o,--out", o->out, "Write the model file here (default: standard output)")->check(kNonEmptyPath);
  cmd->callback([o] { import_trace(*o); });
}

}  // namespace gradsync::apps
