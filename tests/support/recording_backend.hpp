// recording_backend.hpp: a test double for the backend interfaces. It records every call and
// advances a deterministic clock: each stream runs its work in order, a kernel starts no earlier
// than the host issued it and than the waits its stream was given, collectives take
// latency + factor x bytes / bandwidth (ring factors), copies bytes / bandwidth. No contention,
// no SimGrid: what the strategy code asks for, and when it could run.
//
//   RecordingEngine e(/*devices=*/1, /*world=*/8);
//   DdpStep step(model, costs, opts, 16, e.host(), e.device(0), e.ddp_group());
//   step.run_iteration(1);
//   e.calls()  // every compute, copy, collective, host op with start and end
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/cost_model.hpp"
#include "core/step_model.hpp"
#include "core/trace.hpp"

namespace gradsync::testing {

// RecordedCall: one call made through the interfaces.
struct RecordedCall {
  enum class Kind { kCompute, kCopy, kHostToDevice, kCollective, kHost } kind = Kind::kCompute;
  int device = -1;  // issuing device (-1: the host)
  Stream stream = Stream::kCompute;
  std::string name;
  Bytes bytes = 0;
  int peer = -1;  // copy destination
  Collective collective = Collective::kAllreduce;
  int root = -1;
  int bucket = -1;
  int iteration = 0;
  double start_s = 0;
  double end_s = 0;
};

struct RecordingConfig {
  double collective_latency_s = 10e-6;
  double collective_bw_Bps = 100e9;  // bus bandwidth per rank
  double copy_bw_Bps = 50e9;         // peer copies
  double h2d_bw_Bps = 25e9;          // host to device
};

class RecordingEngine {
 public:
  // devices: local devices (DataParallel uses several, a DDP rank one); world: the DDP group size.
  RecordingEngine(int devices, int world, RecordingConfig cfg = {});
  ~RecordingEngine();

  Host& host();
  Device& device(int i);
  std::vector<Device*> devices();
  // ddp_group: rank 0 of a DDP group of `world` ranks, on device 0.
  ProcessGroup& ddp_group();
  // local_group: one process over devices 0..m-1 (DataParallel).
  ProcessGroup& local_group(int m);

  const std::vector<RecordedCall>& calls() const;
  const Trace& trace() const;

  struct State;

 private:
  std::unique_ptr<State> s_;
};

// FixedCostModel: round-number costs for tests. A layer's forward takes
// layer_s[l] x batch (backward twice that), memory work bytes / 1 TB/s, matmuls flops / 100
// TFLOP/s, the optimizer 1 ms; no host launch cost unless launch_s is set.
class FixedCostModel final : public CostModel {
 public:
  FixedCostModel(std::vector<std::string> layer_names, std::vector<double> layer_s);
  // FixedCostModel(model, layer_s): every layer of `model` at `layer_s` per sample.
  FixedCostModel(const StepModel& model, double layer_s);
  ComputeOp forward(std::size_t layer, std::int64_t batch) const override;
  ComputeOp backward(std::size_t layer, std::int64_t batch) const override;
  // backward_into: backward plus into_s (AccumulateGrad's adds of a later micro-step).
  ComputeOp backward_into(std::size_t layer, std::int64_t batch) const override;
  ComputeOp optimizer() const override;
  ComputeOp clip_grad_norm() const override;
  ComputeOp clip_grad_scale() const override;
  ComputeOp memory(const std::string& name, double bytes, int kernels) const override;
  ComputeOp matmul(const std::string& name, double flops, double bytes, int kernels) const override;
  const HostCosts& host() const override { return host_; }

  HostCosts host_;
  double launch_s = 0;
  double into_s = 0;

 private:
  std::vector<std::string> names_;
  std::vector<double> layer_s_;
};

}  // namespace gradsync::testing
