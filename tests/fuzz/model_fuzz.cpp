// model_fuzz.cpp: libFuzzer harness for the model-file loader (models/model_loader.cpp,
// models/op_loader.cpp, the T expressions of models/seq_expr.cpp). A model that loads is then
// costed as `models show` costs it: parameters, a bucket order, every layer's forward and
// backward, and memory, at its default batch and sequence length on an A100.
#include "models/compute_cost.hpp"
#include "models/memory_cost.hpp"
#include "models/model.hpp"
#include "models/step_costs.hpp"
#include "tests/fuzz/fuzz_target.hpp"
#include "topologies/gpu_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return gradsync::fuzz::expect_clean(data, size, [](std::string_view text) {
    using namespace gradsync;
    const Model m = parse_model(text, "fuzz.yaml");
    (void)m.total_params();
    (void)m.parameter_bytes();
    const std::int64_t t = m.seq_len(m.default_seq_len);
    m.check_seq_len(t);
    m.check_sizes(t, m.default_batch);
    (void)to_step_model(m, Precision::kBF16, m.default_seq_len);
    ComputeContext ctx;
    ctx.gpu = &gpu_spec("a100-sxm4-80gb");
    ctx.precision = Precision::kBF16;
    ctx.batch = m.default_batch;
    ctx.seq_len = t;
    (void)model_cost(m, ctx);
    (void)memory_cost(m, ctx, MemoryOptions{});
  });
}
