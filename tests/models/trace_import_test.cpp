// trace_import_test.cpp: torch.profiler traces to a measured step (closed forms on traces written
// here), the measured section of a model file, and the costs it replaces.
#include "models/trace_import.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "models/compute_cost.hpp"
#include "models/scenario_basics.hpp"
#include "topologies/gpu_spec.hpp"
#include "trace_test_util.hpp"

namespace gradsync {
namespace {

// A CPU trace (the legacy exporter's bare list): step 1000 us; zero_grad ends at 20, backward's
// nodes span 400..700, the optimizer 750..950.
const char* kCpuTrace = R"([
  {"name": "ProfilerStep#2", "ph": "X", "ts": 0, "dur": 1000, "tid": 1, "pid": "CPU functions"},
  {"name": "Optimizer.zero_grad#SGD.zero_grad", "ph": "X", "ts": 5, "dur": 15, "tid": 1},
  {"name": "aten::linear", "ph": "X", "ts": 30, "dur": 300, "tid": 1},
  {"name": "autograd::engine::evaluate_function: AddmmBackward0", "ph": "X", "ts": 400, "dur": 200, "tid": 1},
  {"name": "autograd::engine::evaluate_function: TBackward0", "ph": "X", "ts": 650, "dur": 50, "tid": 1},
  {"name": "Optimizer.step#SGD.step", "ph": "X", "ts": 750, "dur": 200, "tid": 1}
])";

using test::error_of;
using test::resnet18_import;

// Two steps of real training on the lent H200 (validation/gpu/h200-2026-11-27: GPT-2 124M in bf16 with
// SDPA, ResNet-50 in bf16 channels_last), recorded as a user does, gzip-compressed. Every kernel of
// the trace belongs to a step's forward, backward or optimizer (the loop runs nothing else), so the
// three phases hold the kernels' time: the sum of the GPU events' durations per step bounds them from
// above, and they keep at least 90% of it (kernels that overlap count once in a union). cuBLASLt
// launches its Hopper GEMMs with cuLaunchKernelEx, a "cuda_driver" event: missing them lost half
// of GPT-2's kernels.
TEST(TraceImport, RealH200TracesKeepEveryKernelInItsPhase) {
  for (const std::string name : {"steps_gpt2-bf16-sdpa", "steps_resnet50-bf16-cl"}) {
    const std::string path = "validation/gpu/h200-2026-11-27/" + name + ".json.gz";
    const std::string text = gunzip_input(read_input_file(path, "trace"), path, "trace");
    const MeasuredStep ms = read_profiler_trace(text, path);
    double gpu_us = 0;
    const nlohmann::json root = nlohmann::json::parse(text);
    for (const auto& e : root.at("traceEvents")) {
      const std::string cat = e.value("cat", "");
      if (cat == "kernel" || cat == "gpu_memset" || cat == "gpu_memcpy") gpu_us += e["dur"].get<double>();
    }
    const double per_step_s = gpu_us * 1e-6 / ms.steps;
    const double phases = ms.forward_s + ms.backward_s + ms.optimizer_s;
    EXPECT_EQ(ms.steps, 2) << name;
    EXPECT_EQ(ms.device, "NVIDIA H200") << name;
    EXPECT_LE(phases, per_step_s * (1 + 1e-9)) << name;
    EXPECT_GE(phases, 0.9 * per_step_s) << name << ": forward " << ms.forward_s << " backward " << ms.backward_s
                                        << " optimizer " << ms.optimizer_s << " of " << per_step_s << " s of kernels";
    EXPECT_GT(ms.backward_s, ms.forward_s) << name;
    EXPECT_NEAR(ms.step_s, phases + ms.other_s, 1e-12) << name;
  }
}

// A gzip trace reads as its JSON; a damaged one is refused naming the file.
TEST(TraceImport, GzipTracesAndTheirErrors) {
  const std::string path = "validation/gpu/h200-2026-11-27/steps_resnet50-bf16-cl.json.gz";
  const std::string gz = read_input_file(path, "trace");
  EXPECT_EQ(gunzip_input("[]", "plain.json", "trace"), "[]");  // not gzip: as it is
  const std::string whole = gunzip_input(gz, path, "trace");
  EXPECT_TRUE(nlohmann::json::parse(whole).contains("traceEvents"));
  const std::string cut = error_of([&] { gunzip_input(gz.substr(0, gz.size() / 2), "cut.json.gz", "trace"); });
  EXPECT_NE(cut.find("cut.json.gz: cannot read the trace: the gzip stream ends early"), std::string::npos) << cut;
  std::string bad = gz;
  for (std::size_t i = bad.size() / 2; i < bad.size() / 2 + 64; ++i) bad[i] = static_cast<char>(bad[i] ^ 0x5a);
  const std::string damaged = error_of([&] { gunzip_input(bad, "bad.json.gz", "trace"); });
  EXPECT_NE(damaged.find("bad.json.gz: cannot read the trace:"), std::string::npos) << damaged;
}

TEST(TraceImport, CpuTracePhasesAreTheHostSpans) {
  const MeasuredStep ms = read_profiler_trace(kCpuTrace, "cpu.json");
  EXPECT_EQ(ms.steps, 1);
  EXPECT_EQ(ms.device, "cpu");
  EXPECT_NEAR(ms.step_s, 1000e-6, 1e-15);
  EXPECT_NEAR(ms.forward_s, 380e-6, 1e-15);  // from zero_grad's end (20) to backward's start (400)
  EXPECT_NEAR(ms.backward_s, 300e-6, 1e-15);
  EXPECT_NEAR(ms.optimizer_s, 200e-6, 1e-15);
  EXPECT_NEAR(ms.other_s, 120e-6, 1e-15);
}

TEST(TraceImport, BadTracesAreRefusedNamingTheFileAndWhy) {
  auto message = [](const std::string& text) { return error_of([&] { read_profiler_trace(text, "t.json"); }); };
  for (const char* empty : {"", " \n"})
    EXPECT_EQ(message(empty),
              "t.json: the file is empty: expected the Chrome trace of torch.profiler's export_chrome_trace");
  // Located by line and column, with what the parser read there; a file that stops says so.
  EXPECT_EQ(message("{\"traceEvents\": ["),
            "t.json:1:18: not JSON (the file ends early: truncated?): syntax error while parsing value - unexpected "
            "end of input; expected '[', '{', or a literal; expected the Chrome trace of torch.profiler's "
            "export_chrome_trace");
  EXPECT_EQ(message("{\n \"traceEvents\": [\n  NaN ]}")
                .rfind("t.json:3:3: not JSON: syntax error while parsing value "
                       "- invalid literal; last read:",
                       0),
            0u);
  EXPECT_NE(message("[{\"name\": \"aten::mm\", \"ph\": \"X\", \"ts\": 1, \"dur\": 1}]").find("no ProfilerStep#N"),
            std::string::npos);
  // An event whose name is not a string, or a step that is not a complete event, is named, not
  // dropped (the import came out a step short).
  EXPECT_EQ(message("[{\"name\": 7, \"ph\": \"X\", \"ts\": 1, \"dur\": 1}]"),
            "t.json: traceEvents[0]: \"name\" is 7; expected a string, as every event of the Chrome trace format has");
  EXPECT_EQ(
      message("[{\"name\": \"ProfilerStep#3\", \"ph\": \"B\", \"ts\": 1}]"),
      "t.json: traceEvents[0] \"ProfilerStep#3\": phase \"B\"; expected \"X\" (a complete event with ts and dur), "
      "as torch.profiler's export_chrome_trace writes its steps");
  EXPECT_NE(message("{\"traceEvents\": 3}").find("no \"traceEvents\" list"), std::string::npos);
  // optimizer.step(closure) runs forward and backward inside the optimizer's span: said so, not
  // taken for a prof.step() between backward and step (the message before 2026-12-01).
  EXPECT_EQ(message(R"([
  {"name": "ProfilerStep#1", "ph": "X", "ts": 0, "dur": 1000},
  {"name": "Optimizer.step#LBFGS.step", "ph": "X", "ts": 100, "dur": 800},
  {"name": "aten::linear", "ph": "X", "ts": 150, "dur": 100},
  {"name": "autograd::engine::evaluate_function: AddmmBackward0", "ph": "X", "ts": 300, "dur": 200}
])")
                .rfind("t.json: ProfilerStep#1's backward (300 to 500 us) runs inside its Optimizer.step (100 to 900 "
                       "us): optimizer.step(closure), whose closure runs forward and backward itself",
                       0),
            0u);
  // A key given twice is refused where it is, not read as the last of the two.
  EXPECT_EQ(message("[{\"name\": \"aten::mm\", \"ph\": \"X\", \"ts\": 1, \"dur\": 1, \"dur\": 900}]"),
            "t.json: traceEvents[0]: key \"dur\" given twice; expected each key once in an event (JSON leaves which "
            "one counts open)");
  EXPECT_EQ(message("{\"traceEvents\": [], \"traceEvents\": []}"),
            "t.json: key \"traceEvents\" given twice in the top level; expected each key once (JSON leaves which one "
            "counts open)");
  EXPECT_NE(message("[{\"name\": \"ProfilerStep#1\", \"ph\": \"X\", \"ts\": 1, \"dur\": 9}]")
                .find("ProfilerStep#1 has no backward"),
            std::string::npos);
  // A rank's step under DDP holds its allreduce: refused (it was imported silently until
  // 2026-12-02, and compare added the simulated communication on top of the measured one).
  EXPECT_EQ(message(R"([
  {"name": "ProfilerStep#1", "ph": "X", "ts": 0, "dur": 1000},
  {"name": "DistributedDataParallel.forward", "ph": "X", "ts": 10, "dur": 300},
  {"name": "autograd::engine::evaluate_function: AddmmBackward0", "ph": "X", "ts": 400, "dur": 200},
  {"name": "c10d::allreduce_", "ph": "X", "ts": 450, "dur": 100}
])"),
            "t.json: traceEvents[1] \"DistributedDataParallel.forward\": a step of one rank of a process group "
            "(DistributedDataParallel, or collectives called by hand), whose times hold its communication; gradsync "
            "simulates that communication at scale and would count it twice: expected one process's step without "
            "DDP (the same model and batch on one GPU, not wrapped)");
  EXPECT_NE(message(R"({"traceEvents": [
  {"name": "ProfilerStep#1", "ph": "X", "ts": 0, "dur": 1000},
  {"name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "cat": "kernel", "ph": "X", "ts": 450, "dur": 100,
   "args": {"device": 0, "correlation": 9}}
]})")
                .find("traceEvents[1] \"ncclDevKernel_AllReduce_Sum_f32_RING_LL\": a step of one rank"),
            std::string::npos);
  // A step of no duration holds nothing: counted, it would halve every mean.
  EXPECT_EQ(message("[{\"name\": \"ProfilerStep#1\", \"ph\": \"X\", \"ts\": 5, \"dur\": 0}]"),
            "t.json: event \"ProfilerStep#1\" lasts 0 us; expected a step that holds its forward, backward and "
            "optimizer");
  // Times no profiler writes: named with the event, not imported (1e300 us) or read as "no step".
  EXPECT_EQ(message("[{\"name\": \"ProfilerStep#1\", \"ph\": \"X\", \"ts\": 0, \"dur\": 1e300}]"),
            "t.json: traceEvents[0] \"ProfilerStep#1\": ts 0 dur 1e+300; expected a duration of 0 to 86400000000 us "
            "(a day) at a time (ts) within 1e18 us of the trace's origin");
  EXPECT_EQ(message("[{\"name\": \"aten::mm\", \"ph\": \"X\", \"ts\": 5, \"dur\": -1000}]"),
            "t.json: traceEvents[0] \"aten::mm\": ts 5 dur -1000; expected a duration of 0 to 86400000000 us (a day) "
            "at a time (ts) within 1e18 us of the trace's origin");
  // A number beyond a double: the parser's words without its tag.
  EXPECT_EQ(message("[{\"name\": \"aten::mm\", \"ph\": \"X\", \"ts\": 5, \"dur\": 1e400}]"),
            "t.json: number overflow parsing '1e400': a number beyond a double's range (about 1.8e308); expected the "
            "Chrome trace of torch.profiler's export_chrome_trace");
  EXPECT_EQ(message("[{\"name\": \"ProfilerStep#1\", \"ph\": \"X\", \"ts\": \"abc\", \"dur\": 10}]"),
            "t.json: traceEvents[0] \"ProfilerStep#1\": \"ts\" and \"dur\" must be numbers (microseconds); got ts "
            "\"abc\" and dur 10");
  EXPECT_EQ(message("[{\"name\": \"ProfilerStep#1\", \"ph\": \"X\", \"ts\": 0, \"dur\": 10}, "
                    "{\"name\": \"ProfilerStep#1\", \"ph\": \"X\", \"ts\": 0, \"dur\": 10}]"),
            "t.json: ProfilerStep#1 appears twice; expected each step once (prof.step() numbers them): two traces "
            "joined, or one written twice");
  // A kernel whose time or launch cannot be read was dropped, and the step came out shorter.
  EXPECT_EQ(
      message("[{\"name\": \"ProfilerStep#1\", \"ph\": \"X\", \"ts\": 0, \"dur\": 10}, "
              "{\"name\": \"gemm\", \"cat\": \"kernel\", \"ph\": \"X\", \"dur\": 5}]"),
      "t.json: traceEvents[1] \"gemm\": \"ts\" and \"dur\" must be numbers (microseconds); got ts missing and dur 5");
  EXPECT_EQ(message("[{\"name\": \"ProfilerStep#1\", \"ph\": \"X\", \"ts\": 0, \"dur\": 10}, "
                    "{\"name\": \"gemm\", \"cat\": \"kernel\", \"ph\": \"X\", \"ts\": 1, \"dur\": 5, "
                    "\"args\": {\"correlation\": \"7\"}}]"),
            "t.json: traceEvents[1] \"gemm\" (kernel): args {\"correlation\":\"7\"}; expected an object whose "
            "\"correlation\" is an integer (the launch that queued it)");
  // A step inside another counted its kernels twice.
  EXPECT_EQ(message("[{\"name\": \"ProfilerStep#3\", \"ph\": \"X\", \"ts\": 1000, \"dur\": 1000}, "
                    "{\"name\": \"ProfilerStep#4\", \"ph\": \"X\", \"ts\": 1100, \"dur\": 500}]"),
            "t.json: ProfilerStep#4 starts at 1100 us, inside ProfilerStep#3 (1000 to 2000 us); expected steps one "
            "after another, as prof.step() makes them");
  // A step's number is a number.
  EXPECT_EQ(message("[{\"name\": \"ProfilerStep#abc\", \"ph\": \"X\", \"ts\": 0, \"dur\": 10}]"),
            "t.json: event \"ProfilerStep#abc\": expected ProfilerStep#N, N the step's number, as prof.step() names "
            "them");
  // A backward that overruns its step is named as such, not as a step without backward.
  EXPECT_EQ(message("[{\"name\": \"ProfilerStep#2\", \"ph\": \"X\", \"ts\": 0, \"dur\": 100}, "
                    "{\"name\": \"autograd::engine::evaluate_function: AddmmBackward0\", \"ph\": \"X\", \"ts\": 50, "
                    "\"dur\": 100}]"),
            "t.json: ProfilerStep#2's backward runs past its end (autograd::engine::evaluate_function: AddmmBackward0 "
            "starts at 50 us and ends at 150 us, the step at 100 us); expected each step to hold its whole backward: "
            "call prof.step() after optimizer.step()");
  // A phase's host span without a time would be dropped and its phase come out shorter.
  EXPECT_EQ(message("[{\"name\": \"ProfilerStep#1\", \"ph\": \"X\", \"ts\": 0, \"dur\": 100}, "
                    "{\"name\": \"Optimizer.step#SGD.step\", \"ph\": \"X\", \"ts\": 80}]"),
            "t.json: traceEvents[1] \"Optimizer.step#SGD.step\": \"ts\" and \"dur\" must be numbers (microseconds); "
            "got ts 80 and dur missing");
  // An aten call without a time is not read: skipped, as before.
  EXPECT_EQ(message("[{\"name\": \"ProfilerStep#1\", \"ph\": \"X\", \"ts\": 0, \"dur\": 100}, "
                    "{\"name\": \"aten::mm\", \"ph\": \"X\", \"ts\": 80}]"),
            "t.json: ProfilerStep#1 has no backward (no autograd::engine::evaluate_function event inside it); "
            "expected a trace of training steps: forward, loss.backward(), optimizer.step(), then prof.step()");
  // optimizer.step() inside the backward would be counted twice.
  EXPECT_EQ(message("[{\"name\": \"ProfilerStep#1\", \"ph\": \"X\", \"ts\": 0, \"dur\": 1000}, "
                    "{\"name\": \"autograd::engine::evaluate_function: AddmmBackward0\", \"ph\": \"X\", \"ts\": 400, "
                    "\"dur\": 300}, "
                    "{\"name\": \"Optimizer.step#SGD.step\", \"ph\": \"X\", \"ts\": 650, \"dur\": 200}]"),
            "t.json: ProfilerStep#1's Optimizer.step starts at 650 us, inside its backward (400 to 700 us); expected "
            "optimizer.step() after loss.backward()");
  // Before it: prof.step() sits between loss.backward() and optimizer.step().
  EXPECT_EQ(message("[{\"name\": \"ProfilerStep#1\", \"ph\": \"X\", \"ts\": 0, \"dur\": 1000}, "
                    "{\"name\": \"autograd::engine::evaluate_function: AddmmBackward0\", \"ph\": \"X\", \"ts\": 400, "
                    "\"dur\": 300}, "
                    "{\"name\": \"Optimizer.step#SGD.step\", \"ph\": \"X\", \"ts\": 100, \"dur\": 10}]"),
            "t.json: ProfilerStep#1's Optimizer.step starts at 100 us, before its backward (400 to 700 us): "
            "prof.step() runs between loss.backward() and optimizer.step(); expected optimizer.step() after "
            "loss.backward() in each profiler step: call prof.step() after optimizer.step()");
  // On a GPU, a backward that launched no kernel is no training step.
  EXPECT_EQ(message(R"([
    {"name": "ProfilerStep#2", "ph": "X", "ts": 0, "dur": 1000, "tid": 1},
    {"name": "cudaLaunchKernel", "cat": "cuda_runtime", "ph": "X", "ts": 10, "dur": 5, "args": {"correlation": 1}},
    {"name": "autograd::engine::evaluate_function: AddmmBackward0", "ph": "X", "ts": 400, "dur": 200, "tid": 2},
    {"name": "gemm", "cat": "kernel", "ph": "X", "ts": 20, "dur": 100, "args": {"correlation": 1, "device": 0}}
  ])"),
            "t.json: ProfilerStep#2's backward launched no kernel on the GPU that the trace records (the rest of the "
            "step did; a kernel is the launch's whose args.correlation it shares); expected a trace of training steps "
            "on one GPU");
  // Nor is a forward that launched none (here its only kernel's id matches the backward's launch).
  EXPECT_EQ(message(R"([
    {"name": "ProfilerStep#2", "ph": "X", "ts": 0, "dur": 1000, "tid": 1},
    {"name": "cudaLaunchKernel", "cat": "cuda_runtime", "ph": "X", "ts": 10, "dur": 5, "args": {"correlation": 1}},
    {"name": "autograd::engine::evaluate_function: AddmmBackward0", "ph": "X", "ts": 400, "dur": 200, "tid": 2},
    {"name": "cudaLaunchKernel", "cat": "cuda_runtime", "ph": "X", "ts": 450, "dur": 5, "args": {"correlation": 2}},
    {"name": "gemm", "cat": "kernel", "ph": "X", "ts": 20, "dur": 100, "args": {"correlation": 2, "device": 0}},
    {"name": "gemm", "cat": "kernel", "ph": "X", "ts": 460, "dur": 100, "args": {"correlation": 2, "device": 0}}
  ])"),
            "t.json: ProfilerStep#2's forward launched no kernel on the GPU that the trace records (the rest of the "
            "step did; a kernel is the launch's whose args.correlation it shares); expected a trace of training steps "
            "on one GPU");
  // Gradient accumulation: two micro-batches' forward and backward in one step, each backward seeded
  // by loss.backward()'s ones_like; a backward formula's own ones_like (inside an autograd function)
  // seeds nothing, nor does a forward's that no backward follows before the next seed.
  EXPECT_EQ(message(R"([
    {"name": "ProfilerStep#3", "ph": "X", "ts": 0, "dur": 1000, "tid": 1},
    {"name": "aten::ones_like", "ph": "X", "ts": 10, "dur": 5, "tid": 1},
    {"name": "aten::linear", "ph": "X", "ts": 30, "dur": 100, "tid": 1},
    {"name": "aten::ones_like", "ph": "X", "ts": 180, "dur": 5, "tid": 1},
    {"name": "autograd::engine::evaluate_function: AddmmBackward0", "ph": "X", "ts": 200, "dur": 200, "tid": 1},
    {"name": "aten::ones_like", "ph": "X", "ts": 250, "dur": 5, "tid": 1},
    {"name": "aten::add_", "ph": "X", "ts": 420, "dur": 5, "tid": 1},
    {"name": "aten::linear", "ph": "X", "ts": 500, "dur": 100, "tid": 1},
    {"name": "aten::ones_like", "ph": "X", "ts": 620, "dur": 5, "tid": 1},
    {"name": "autograd::engine::evaluate_function: AddmmBackward0", "ph": "X", "ts": 650, "dur": 200, "tid": 1},
    {"name": "Optimizer.step#SGD.step", "ph": "X", "ts": 900, "dur": 50, "tid": 1}
  ])"),
            "t.json: ProfilerStep#3 holds 2 backward passes (loss.backward() seeds autograd again at 625 us: "
            "gradient accumulation?); expected one forward and loss.backward() per profiler step: with gradient "
            "accumulation, call prof.step() after every micro-step (README: Your measured step as input), and "
            "gradsync finds the micro-steps per optimizer step");
  // A launch's correlation id is an integer, as its kernel's.
  EXPECT_EQ(message(R"([
    {"name": "ProfilerStep#2", "ph": "X", "ts": 0, "dur": 1000, "tid": 1},
    {"name": "cudaLaunchKernel", "cat": "cuda_runtime", "ph": "X", "ts": 10, "dur": 5, "args": {"correlation": "1"}}
  ])"),
            "t.json: traceEvents[1] \"cudaLaunchKernel\" (cuda_runtime): args {\"correlation\":\"1\"}; expected an "
            "object whose \"correlation\" is an integer (the kernel or copy it queued)");
}

// The measured section replaces the roofline: layers in proportion to the batch, the optimizer
// as measured, the rest of the step before the first layer.
TEST(TraceImport, MeasuredModelCostsAreTheMeasurement) {
  TraceImport opts = resnet18_import();
  MeasuredStep ms = read_profiler_trace(kCpuTrace, "cpu.json");
  const Model m = parse_model(imported_model_text(ms, opts), "imported.yaml");
  ASSERT_TRUE(m.measured.has_value());
  EXPECT_EQ(m.measured->batch, 16);
  // The measured batch is the model's default (resnet18's own is 32): models show, compare and
  // simulate without a batch run the step that was measured.
  EXPECT_EQ(m.default_batch, 16);
  ComputeContext ctx = opts.split;
  ctx.batch = 16;
  const ModelCost at16 = model_cost(m, ctx);
  EXPECT_NEAR(at16.forward_s, 380e-6 + 120e-6, 1e-9);
  EXPECT_NEAR(at16.backward_s, 300e-6, 1e-9);
  EXPECT_NEAR(optimizer_cost(m, Optimizer::kAdamW, false, ctx).time_s, 200e-6, 1e-12);
  // No optimizer (--optimizer none): no optimizer time either, as no optimizer state.
  EXPECT_EQ(optimizer_cost(m, Optimizer::kNone, false, ctx).time_s, 0.0);
  ctx.batch = 32;
  const ModelCost at32 = model_cost(m, ctx);
  EXPECT_NEAR(at32.forward_s, 2 * 380e-6 + 120e-6, 1e-9);
  EXPECT_NEAR(at32.backward_s, 600e-6, 1e-9);
  // A model that already carries a measurement is not imported into again.
  const std::filesystem::path file = std::filesystem::path(::testing::TempDir()) / "trace_import_measured.yaml";
  std::ofstream(file) << imported_model_text(ms, opts);
  opts.model = file.string();
  const std::string twice = error_of([&] { imported_model_text(ms, opts); });
  EXPECT_NE(twice.find("already carries a measured step (from cpu.json)"), std::string::npos) << twice;
  std::filesystem::remove(file);
}

// The precision the step ran in (import-trace --precision) is written with it, and runs of the
// model default to it: an fp32 step's memory is fp32's, not the bf16 autocast an A100 would default
// to (the largest batch that fits was overstated by 55%, a new user's report). A file written before
// it was recorded still loads, and defaults as any model does; a precision gradsync does not know
// is refused at its line.
TEST(TraceImport, AMeasuredStepKeepsItsPrecision) {
  const std::string text = imported_model_text(read_profiler_trace(kCpuTrace, "cpu.json"), resnet18_import());
  ASSERT_NE(text.find("\n  precision: fp32\n"), std::string::npos);
  Model m = parse_model(text, "m.yaml");
  ASSERT_TRUE(m.measured->precision);
  EXPECT_EQ(*m.measured->precision, Precision::kFP32);
  Scenario s;
  s.model = "m.yaml";
  EXPECT_EQ(resolve_basics(s, m, gpu_spec("a100-sxm4-80gb")).precision, Precision::kFP32);
  s.precision = "bf16";  // asked for: as asked
  EXPECT_EQ(resolve_basics(s, m, gpu_spec("a100-sxm4-80gb")).precision, Precision::kBF16);
  std::string old = text;
  old.erase(old.find("  precision: fp32\n"), 18);
  Model before = parse_model(old, "m.yaml");
  EXPECT_FALSE(before.measured->precision);
  EXPECT_EQ(resolve_basics(Scenario{}, before, gpu_spec("a100-sxm4-80gb")).precision, Precision::kBF16);
  std::string bad = text;
  bad.replace(bad.find("  precision: fp32\n"), 18, "  precision: fp8\n");
  const std::string message = error_of([&] { parse_model(bad, "m.yaml"); });
  EXPECT_NE(message.find("precision \"fp8\" is unknown; expected fp32, tf32, bf16 or fp16"), std::string::npos)
      << message;
  EXPECT_EQ(message.rfind("m.yaml:", 0), 0u) << message;
  // A step measured in bf16, run on a GPU without bf16: the file's field is named (the error said
  // `precision "": ...` until 2026-12-02, a new user's report).
  std::string bf16 = text;
  bf16.replace(bf16.find("  precision: fp32\n"), 18, "  precision: bf16\n");
  Model in_bf16 = parse_model(bf16, "m.yaml");
  in_bf16.origin = "m.yaml";
  Scenario none;
  try {
    resolve_basics(none, in_bf16, gpu_spec("v100"));
    ADD_FAILURE() << "a bf16 step on a V100 was accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("m.yaml measured.precision bf16 (the precision its step was measured in, "
                                          "the default of runs of the model): GPU v100-sxm2-32gb",
                                          0),
              0u)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("has no bf16 tensor cores"), std::string::npos) << e.what();
  }
}

// The measured section is checked like the rest of the file: layers by name in order, parts that
// add up to the step.
TEST(TraceImport, MeasuredSectionsThatDoNotAddUpAreRefused) {
  const std::string text = imported_model_text(read_profiler_trace(kCpuTrace, "cpu.json"), resnet18_import());
  auto message = [](const std::string& t) { return error_of([&] { parse_model(t, "m.yaml"); }); };
  std::string renamed = text;
  renamed.replace(renamed.find("{name: \"conv1\""), 14, "{name: \"conv9\"");
  EXPECT_NE(message(renamed).find("name \"conv9\" is not layer 0 of the model, \"conv1\""), std::string::npos)
      << message(renamed);
  std::string longer = text;
  longer.replace(longer.find("  step_s: 0.001"), 15, "  step_s: 0.002");
  EXPECT_NE(message(longer).find("must agree"), std::string::npos) << message(longer);
}

}  // namespace
}  // namespace gradsync
