// recording_backend.cpp: the recording test double's clock and records.
#include "tests/support/recording_backend.hpp"

#include <algorithm>
#include <array>
#include <map>

namespace gradsync::testing {

using Kind = RecordedCall::Kind;

struct RecordingEngine::State {
  RecordingConfig cfg;
  int world = 1;
  std::vector<RecordedCall> calls;
  Trace trace;
  double main_clock = 0;
  double* now = &main_clock;  // the running host thread's clock
  double gil_free_at = 0;
  int iteration = 0;
  double iteration_start = 0;

  struct Dev;
  std::vector<std::unique_ptr<Dev>> devs;
  std::unique_ptr<ProcessGroup> ddp;
  std::map<int, std::unique_ptr<ProcessGroup>> local;
  std::unique_ptr<Host> host;

  void record(RecordedCall c) {
    if (c.device >= 0) {
      TraceEvent e;
      e.rank = c.device;
      e.stream = c.stream;
      e.name = c.name;
      e.start_s = c.start_s;
      e.end_s = c.end_s;
      e.bytes = c.bytes;
      e.bucket = c.bucket;
      e.iteration = iteration;
      e.peer = c.peer;
      trace.add(e);
    }
    c.iteration = iteration;
    calls.push_back(std::move(c));
  }
};

namespace {

using State = RecordingEngine::State;

class RecWork final : public Work {
 public:
  RecWork(State* s, double end) : s_(s), end_(end) {}
  void wait() override { *s_->now = std::max(*s_->now, end_); }
  bool done() const override { return *s_->now >= end_; }
  double end() const { return end_; }

 private:
  State* s_;
  double end_;
};

double end_of(Work& w) { return static_cast<RecWork&>(w).end(); }

}  // namespace

struct RecordingEngine::State::Dev final : public Device {
  State* s;
  int idx;
  std::array<double, 4> tail{};     // per stream: when its last work ends
  std::array<double, 4> pending{};  // per stream: what it was told to wait for

  Dev(State* st, int i) : s(st), idx(i) {}

  double ready(Stream st) const {
    const auto k = static_cast<std::size_t>(st);
    return std::max({*s->now, tail[k], pending[k]});
  }
  WorkPtr run(Kind kind, Stream st, std::string name, Bytes bytes, double dur, int peer, int bucket) {
    const double start = ready(st);
    const double end = start + dur;
    tail[static_cast<std::size_t>(st)] = end;
    RecordedCall c;
    c.kind = kind;
    c.device = idx;
    c.stream = st;
    c.name = std::move(name);
    c.bytes = bytes;
    c.peer = peer;
    c.bucket = bucket;
    c.start_s = start;
    c.end_s = end;
    s->record(std::move(c));
    return std::make_shared<RecWork>(s, end);
  }

  int index() const override { return idx; }
  WorkPtr compute(const ComputeOp& op, Stream st) override {
    *s->now += op.host_s;
    return run(Kind::kCompute, st, op.name, static_cast<Bytes>(op.bytes), op.time_s, -1, op.bucket);
  }
  WorkPtr copy_to(Device& dst, const CopyOp& op, Stream st) override {
    return run(Kind::kCopy, st, op.name, op.bytes, static_cast<double>(op.bytes) / s->cfg.copy_bw_Bps, dst.index(), -1);
  }
  WorkPtr copy_from_host(const CopyOp& op, Stream st) override {
    return run(Kind::kHostToDevice, st, op.name, op.bytes, static_cast<double>(op.bytes) / s->cfg.h2d_bw_Bps, -1, -1);
  }
  void stream_wait(Stream st, Work& w) override {
    auto& p = pending[static_cast<std::size_t>(st)];
    p = std::max(p, end_of(w));
  }
  void synchronize() override {
    for (double t : tail) *s->now = std::max(*s->now, t);
  }
};

namespace {

// collective_time: latency + the ring algorithms' bytes on the wire per rank / bandwidth.
double collective_time(const RecordingConfig& cfg, Collective c, Bytes bytes, int n) {
  const double b = static_cast<double>(bytes);
  double factor = 0;
  switch (c) {
    case Collective::kAllreduce:
      factor = 2.0 * (n - 1) / n;
      break;
    case Collective::kBroadcast:
    case Collective::kReduce:
      factor = n > 1 ? 1.0 : 0.0;
      break;
    case Collective::kAllgather:
      factor = n - 1;
      break;
    case Collective::kReduceScatter:
      factor = static_cast<double>(n - 1) / n;
      break;
  }
  return cfg.collective_latency_s + factor * b / cfg.collective_bw_Bps;
}

// Group: a collective over some devices, starting when all of them are ready, ending together.
class Group final : public CollectiveCalls {
 public:
  Group(State* s, std::vector<State::Dev*> devs, int size) : s_(s), devs_(std::move(devs)), size_(size) {}
  int rank() const override { return 0; }
  int size() const override { return size_; }

  WorkPtr call(Collective c, const CollectiveOp& op, int root) override {
    // The comm stream first waits for the compute stream's current point (c10d's syncStream).
    double start = *s_->now;
    for (State::Dev* d : devs_) {
      start = std::max({start, d->ready(Stream::kComm), d->tail[static_cast<std::size_t>(Stream::kCompute)],
                        d->pending[static_cast<std::size_t>(Stream::kCompute)]});
    }
    const double end = start + collective_time(s_->cfg, c, op.bytes, size_);
    for (State::Dev* d : devs_) {
      d->tail[static_cast<std::size_t>(Stream::kComm)] = end;
      RecordedCall rc;
      rc.kind = Kind::kCollective;
      rc.device = d->idx;
      rc.stream = Stream::kComm;
      rc.name = op.name;
      rc.bytes = op.bytes;
      rc.collective = c;
      rc.root = root;
      rc.bucket = op.bucket;
      rc.start_s = start;
      rc.end_s = end;
      s_->record(std::move(rc));
    }
    return std::make_shared<RecWork>(s_, end);
  }

 private:
  State* s_;
  std::vector<State::Dev*> devs_;
  int size_;
};

class RecHost final : public Host {
 public:
  explicit RecHost(State* s) : s_(s) {}
  void run(const HostOp& op) override {
    double start = *s_->now;
    if (op.gil) start = std::max(start, s_->gil_free_at);
    const double end = start + op.time_s;
    if (op.gil) s_->gil_free_at = end;
    *s_->now = end;
    RecordedCall c;
    c.kind = Kind::kHost;
    c.stream = Stream::kHost;
    c.name = op.name;
    c.start_s = start;
    c.end_s = end;
    if (op.gil && op.time_s > 0) {
      // As the simulator traces work under the GIL: "host:<op>" on the host lane of the
      // process's first device.
      TraceEvent e;
      e.rank = 0;
      e.stream = Stream::kHost;
      e.name = "host:" + op.name;
      e.start_s = start;
      e.end_s = end;
      e.iteration = s_->iteration;
      s_->trace.add(e);
    }
    s_->record(std::move(c));
  }
  void parallel(int n, const std::function<void(int)>& fn) override {
    double* parent = s_->now;
    std::vector<double> clocks(static_cast<std::size_t>(n), *parent);
    for (int i = 0; i < n; ++i) {
      s_->now = &clocks[static_cast<std::size_t>(i)];
      fn(i);
    }
    s_->now = parent;
    for (double c : clocks) *parent = std::max(*parent, c);
  }
  void begin_iteration(int iteration) override {
    s_->iteration = iteration;
    s_->iteration_start = *s_->now;
  }
  void end_iteration(int iteration) override {
    for (const auto& d : s_->devs) {
      TraceEvent e;
      e.rank = d->idx;
      e.stream = Stream::kHost;
      e.name = iteration_event(iteration);
      e.start_s = s_->iteration_start;
      e.end_s = *s_->now;
      e.iteration = iteration;
      s_->trace.add(e);
    }
  }

 private:
  State* s_;
};

}  // namespace

RecordingEngine::RecordingEngine(int devices, int world, RecordingConfig cfg) : s_(std::make_unique<State>()) {
  s_->cfg = cfg;
  s_->world = world;
  for (int i = 0; i < devices; ++i) s_->devs.push_back(std::make_unique<State::Dev>(s_.get(), i));
  s_->host = std::make_unique<RecHost>(s_.get());
  s_->ddp = std::make_unique<Group>(s_.get(), std::vector<State::Dev*>{s_->devs[0].get()}, world);
}

RecordingEngine::~RecordingEngine() = default;

Host& RecordingEngine::host() { return *s_->host; }
Device& RecordingEngine::device(int i) { return *s_->devs[static_cast<std::size_t>(i)]; }
std::vector<Device*> RecordingEngine::devices() {
  std::vector<Device*> out;
  for (auto& d : s_->devs) out.push_back(d.get());
  return out;
}
ProcessGroup& RecordingEngine::ddp_group() { return *s_->ddp; }
ProcessGroup& RecordingEngine::local_group(int m) {
  auto& g = s_->local[m];
  if (!g) {
    std::vector<State::Dev*> devs;
    for (int i = 0; i < m; ++i) devs.push_back(s_->devs[static_cast<std::size_t>(i)].get());
    g = std::make_unique<Group>(s_.get(), devs, m);
  }
  return *g;
}
const std::vector<RecordedCall>& RecordingEngine::calls() const { return s_->calls; }
const Trace& RecordingEngine::trace() const { return s_->trace; }

FixedCostModel::FixedCostModel(std::vector<std::string> layer_names, std::vector<double> layer_s)
    : names_(std::move(layer_names)), layer_s_(std::move(layer_s)) {}

FixedCostModel::FixedCostModel(const StepModel& model, double layer_s) : layer_s_(model.layers.size(), layer_s) {
  for (const LayerInfo& l : model.layers) names_.push_back(l.name);
}

ComputeOp FixedCostModel::forward(std::size_t layer, std::int64_t batch) const {
  ComputeOp op;
  op.name = forward_event(names_[layer]);
  op.kind = OpKind::kMatmul;
  op.time_s = layer_s_[layer] * static_cast<double>(batch);
  op.host_s = launch_s;
  return op;
}

ComputeOp FixedCostModel::backward(std::size_t layer, std::int64_t batch) const {
  ComputeOp op = forward(layer, batch);
  op.name = backward_event(names_[layer]);
  op.time_s *= 2;
  return op;
}

ComputeOp FixedCostModel::backward_into(std::size_t layer, std::int64_t batch) const {
  ComputeOp op = backward(layer, batch);
  op.time_s += into_s;
  return op;
}

// clip_grad_norm_'s norm takes 0.5 ms and its scaling 0.25 ms, each one launch.
ComputeOp FixedCostModel::clip_grad_norm() const {
  return ComputeOp{"clip_grad_norm", OpKind::kMemory, 0, 0, 1, 0.5e-3, launch_s};
}

ComputeOp FixedCostModel::clip_grad_scale() const {
  return ComputeOp{"clip_grad_norm:scale", OpKind::kMemory, 0, 0, 1, 0.25e-3, launch_s};
}

ComputeOp FixedCostModel::optimizer() const {
  ComputeOp op;
  op.name = "optimizer";
  op.time_s = 1e-3;
  op.host_s = launch_s;
  return op;
}

ComputeOp FixedCostModel::memory(const std::string& name, double bytes, int kernels) const {
  ComputeOp op;
  op.name = name;
  op.bytes = bytes;
  op.kernels = kernels;
  op.time_s = bytes / 1e12;
  op.host_s = launch_s * kernels;
  return op;
}

ComputeOp FixedCostModel::matmul(const std::string& name, double flops, double bytes, int kernels) const {
  ComputeOp op;
  op.name = name;
  op.kind = OpKind::kMatmul;
  op.flops = flops;
  op.bytes = bytes;
  op.kernels = kernels;
  op.time_s = flops / 1e14;
  op.host_s = launch_s * kernels;
  return op;
}

}  // namespace gradsync::testing
