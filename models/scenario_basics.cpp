// scenario_basics.cpp: model, precision, optimizer, batch and the numeric keys of a scenario.
#include "models/scenario_basics.hpp"

#include <fmt/format.h>

#include <optional>

namespace gradsync {

Model scenario_model(const Scenario& s) {
  return scenario_field("model", s.model, [&] { return load_model(s.model); });
}

ScenarioBasics resolve_basics(const Scenario& s, Model& model, const GpuSpec& gpu) {
  ScenarioBasics r;
  r.precision = scenario_field("precision", s.precision, [&] {
    const Precision p = !s.precision.empty() ? parse_precision(s.precision)
                        : gpu.bf16_flops     ? Precision::kBF16
                                             : Precision::kFP16;
    gpu.peak_flops(p);
    return p;
  });
  r.optimizer = scenario_field("optimizer", s.optimizer, [&] { return parse_optimizer(s.optimizer); });
  if (s.batch_per_gpu < 0)
    throw ConfigError(fmt::format("batch_per_gpu {}: expected an integer >= 1", s.batch_per_gpu));
  r.batch = s.batch_per_gpu > 0 ? s.batch_per_gpu : model.default_batch;
  if (s.seq_len < 0) throw ConfigError(fmt::format("seq_len {}: expected an integer >= 1", s.seq_len));
  if (s.seq_len > 0)
    scenario_field("seq_len", std::to_string(s.seq_len), [&] {
      model.check_seq_len(s.seq_len);
      return 0;
    });
  r.seq_len = model.seq_len(s.seq_len > 0 ? std::optional<std::int64_t>(s.seq_len) : std::nullopt);
  r.hook = scenario_field("comm_hook", s.comm_hook, [&] { return parse_comm_hook(s.comm_hook); });
  if (s.bucket_cap_mb && !(*s.bucket_cap_mb > 0)) {
    throw ConfigError(fmt::format("bucket_cap_mb {}: expected a size in MiB > 0", *s.bucket_cap_mb));
  }
  if (s.grad_accum < 1) throw ConfigError(fmt::format("grad_accum {}: expected an integer >= 1", s.grad_accum));
  if (s.iterations < 1) throw ConfigError(fmt::format("iterations {}: expected an integer >= 1", s.iterations));
  if (s.warmup < 0 || s.warmup >= s.iterations) {
    throw ConfigError(
        fmt::format("warmup {}: expected 0..{} (fewer than iterations {}, so that a steady iteration is left)",
                    s.warmup, s.iterations - 1, s.iterations));
  }
  return r;
}

}  // namespace gradsync
