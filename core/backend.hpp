// backend.hpp: the seam between the strategy code (Reducer, DP and DDP step drivers) and an
// engine: the operations a step issues, and the Host, Device and ProcessGroup interfaces that the
// SimGrid engine (sim/), the CUDA/NCCL and CPU/MPI engines (real/) and the tests' recording
// backend implement. Nothing here knows SimGrid, CUDA or MPI.
//
// The model is PyTorch's: a host thread issues work onto a device's streams and goes on; each
// stream runs its work in order; a stream can wait for work on another (an event); the host
// blocks only where it waits (Work::wait, synchronize).
//
//   WorkPtr fwd = dev.compute(costs.forward(layer, batch));        // enqueued, not finished
//   WorkPtr ar = pg.allreduce({"allreduce:bucket0", bytes, DType::kFloat32, .bucket = 0});
//   dev.stream_wait(Stream::kCompute, *ar);                        // compute waits for it
//   dev.synchronize();                                             // the host waits for all
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/dtype.hpp"
#include "core/units.hpp"

namespace gradsync {

// Stream is where work runs on a device; the trace shows one track per rank and stream.
//   compute: kernels of forward, backward, optimizer, bucket copies (ordered);
//   comm:    collectives, FIFO like the process group's NCCL stream;
//   copy:    copy engines (host-to-device, peer copies);
//   host:    the CPU thread that issues work (Python and framework overhead).
enum class Stream { kCompute, kComm, kCopy, kHost };
std::string_view stream_name(Stream s);

// OpKind says how a compute op is costed and, on real hardware, what kernel reproduces it.
enum class OpKind { kMatmul, kConv, kAttention, kMemory };
std::string_view op_kind_name(OpKind k);

// ComputeLoad: how a compute op's GPU time divides for contention with an NCCL kernel running
// beside it (models/contention.hpp). All zero: the op does not slow (a calibration's measured
// time without a breakdown is taken as SM-bound by its owner).
struct ComputeLoad {
  double gpu_s = 0;       // the GPU's time alone (the op's time_s may be longer: host-bound)
  double sm_s = 0;        // of gpu_s, kernels bound by the SMs' throughput (GEMMs, convolutions)
  double sm_held_s = 0;   // those kernels' time with NCCL's blocks holding their SMs (waves)
  double hbm_s = 0;       // of gpu_s, kernels bound by DRAM bandwidth
  double hbm_demand = 0;  // the fraction of DRAM peak those kernels stream at
};

// ComputeOp is one piece of device work: a layer's forward or backward, an optimizer step, a
// bucket copy, a hook's cast. time_s is the cost model's prediction (the SimGrid engine runs for
// that long); flops and bytes let a real engine issue work of the same size.
struct ComputeOp {
  std::string name;  // trace event name: "fwd:transformer.h.3.mlp.c_fc", "copy_in:fc.bias", ...
  OpKind kind = OpKind::kMemory;
  double flops = 0;
  double bytes = 0;  // bytes read plus written
  int kernels = 1;
  double time_s = 0;   // device time
  double host_s = 0;   // host time to issue it (kernel launches); the op cannot start before
  int bucket = -1;     // the DDP bucket it belongs to, -1 for none
  ComputeLoad load{};  // for contention with NCCL's kernels (engines that model it)
};

// CopyOp is a copy between memories (host to device, device to device).
struct CopyOp {
  std::string name;  // "dp:scatter", "dp:gather", "h2d:input"
  Bytes bytes = 0;
};

// InputLocation: where each batch is when the step starts, as the training script puts it there.
// kPageable: a DataLoader's default (pin_memory=False) and x.to(device): cudaMemcpyAsync from
// pageable memory on the current stream, then cudaStreamSynchronize, because non_blocking=False
// (ATen's copy_kernel_cuda), so the host waits for the stream and the copy before it launches the
// forward. kPinned: pin_memory=True and x.to(device, non_blocking=True): the copy is queued on the
// current stream and the host goes on. kDevice: the batch already lives on the GPU (synthetic
// data, as PyTorch's DDP benchmark): no copy.
enum class InputLocation { kPageable, kPinned, kDevice };

// Collective is what a process group call does; the names are the trace's.
enum class Collective { kAllreduce, kBroadcast, kReduce, kAllgather, kReduceScatter };
inline constexpr Collective kCollectives[] = {Collective::kAllreduce, Collective::kBroadcast, Collective::kReduce,
                                              Collective::kAllgather, Collective::kReduceScatter};
// collective_name: "allreduce", "broadcast", "reduce", "allgather", "reducescatter" (nccl-tests'
// spelling); parse_collective reads it back, nullopt for anything else.
std::string_view collective_name(Collective c);
std::optional<Collective> parse_collective(std::string_view text);

// CollectiveOp is one process-group call. bytes is the size of each rank's buffer: the allreduced
// or broadcast tensor, each rank's contribution to an allgather, the input of a reduce-scatter.
struct CollectiveOp {
  std::string name;  // "allreduce:bucket7", "dp:replicate", "broadcast:buffers"
  Bytes bytes = 0;
  DType dtype = DType::kFloat32;
  int bucket = -1;
};

// HostOp is CPU time on the calling host thread: Python overhead, module copies, graph
// traversal. gil: the work holds Python's global interpreter lock, so host threads of one
// process (DataParallel's replicas) do it one at a time.
struct HostOp {
  std::string name;
  double time_s = 0;
  bool gil = true;
};

// Work is something that completes later: a kernel, a copy, a collective.
class Work {
 public:
  virtual ~Work() = default;
  // wait blocks the calling host thread until the work has finished.
  virtual void wait() = 0;
  // done says whether it has finished (without blocking).
  virtual bool done() const = 0;
};
using WorkPtr = std::shared_ptr<Work>;

// Device is one GPU (or one CPU rank) as a host thread sees it.
class Device {
 public:
  virtual ~Device() = default;
  // index is the device's position among the devices of the run (the rank for DDP).
  virtual int index() const = 0;
  // compute enqueues `op` on stream `s`.
  virtual WorkPtr compute(const ComputeOp& op, Stream s = Stream::kCompute) = 0;
  // compute_run enqueues `ops` one after another on stream `s` with nothing between them (no
  // wait, no hook, no other stream's work), as compute() would each, and returns the last one's
  // work. An engine may run them as one piece of work named `name` taking their summed GPU and
  // host time (the simulator does, for DDP's no_sync micro-steps: one trace event each instead of
  // one per layer, so that 32 micro-steps cost about what one does); by default each is its own.
  virtual WorkPtr compute_run(const std::vector<ComputeOp>& ops, const std::string& name, Stream s = Stream::kCompute) {
    (void)name;
    WorkPtr last;
    for (const ComputeOp& op : ops) last = compute(op, s);
    return last;
  }
  // copy_to enqueues a copy of `op.bytes` from this device to `dst` on this device's stream `s`
  // (a peer copy along the topology's route, or through host memory where peer access is not
  // possible).
  virtual WorkPtr copy_to(Device& dst, const CopyOp& op, Stream s = Stream::kCopy) = 0;
  // copy_from_host enqueues a host-to-device copy of `op.bytes` into this device.
  virtual WorkPtr copy_from_host(const CopyOp& op, Stream s = Stream::kCopy) = 0;
  // stream_wait makes stream `s` wait until `w` has finished (cudaStreamWaitEvent).
  virtual void stream_wait(Stream s, Work& w) = 0;
  // synchronize blocks the host until every stream of the device is idle.
  virtual void synchronize() = 0;
};

// ProcessGroup is a c10d-like group. DDP has one per rank (the caller is one rank); DataParallel
// has one single-process group over its local devices (the caller drives all of them, root is a
// device index). Every collective runs on the comm stream of each participating device, FIFO,
// after that device's compute stream reaches the point where the call was made (c10d's NCCL
// stream waits on the current stream).
class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual WorkPtr allreduce(const CollectiveOp& op) = 0;
  virtual WorkPtr broadcast(const CollectiveOp& op, int root) = 0;
  virtual WorkPtr reduce(const CollectiveOp& op, int root) = 0;
  virtual WorkPtr allgather(const CollectiveOp& op) = 0;
  virtual WorkPtr reduce_scatter(const CollectiveOp& op) = 0;
};

// CollectiveCalls: a ProcessGroup whose five collectives are one call(kind, op, root) (root -1
// for allreduce, allgather and reduce-scatter): what every engine's group implements.
class CollectiveCalls : public ProcessGroup {
 public:
  virtual WorkPtr call(Collective c, const CollectiveOp& op, int root) = 0;
  WorkPtr allreduce(const CollectiveOp& op) override { return call(Collective::kAllreduce, op, -1); }
  WorkPtr broadcast(const CollectiveOp& op, int root) override { return call(Collective::kBroadcast, op, root); }
  WorkPtr reduce(const CollectiveOp& op, int root) override { return call(Collective::kReduce, op, root); }
  WorkPtr allgather(const CollectiveOp& op) override { return call(Collective::kAllgather, op, -1); }
  WorkPtr reduce_scatter(const CollectiveOp& op) override { return call(Collective::kReduceScatter, op, -1); }
};

// bus_factor: nccl-tests' busbw / algbw for a collective over n ranks (allreduce 2(n-1)/n,
// allgather and reduce-scatter (n-1)/n, broadcast and reduce 1): also the bytes each rank sends
// and receives per byte of the buffer in NCCL's ring algorithms.
double bus_factor(Collective c, int n);

// issue_collective calls the method of `pg` that runs `c` (root: for broadcast and reduce).
WorkPtr issue_collective(ProcessGroup& pg, Collective c, const CollectiveOp& op, int root);

// Host is the process's CPU side: where host work and the iteration boundaries are recorded and
// where DataParallel starts one thread per replica.
class Host {
 public:
  virtual ~Host() = default;
  // run spends op.time_s of CPU on the calling thread (after taking the GIL if op.gil).
  virtual void run(const HostOp& op) = 0;
  // parallel runs fn(0..n-1) on n host threads of this process and joins them (DataParallel's
  // parallel_apply; the autograd engine's per-device worker threads).
  virtual void parallel(int n, const std::function<void(int)>& fn) = 0;
  // begin_iteration and end_iteration bracket training step `iteration` (1-based); the engine
  // records an "iteration:N" event between them and tags the events in between.
  virtual void begin_iteration(int iteration) = 0;
  virtual void end_iteration(int iteration) = 0;
};

}  // namespace gradsync
