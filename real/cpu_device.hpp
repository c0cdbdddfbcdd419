// cpu_device.hpp: a CPU rank's device for the CPU engine (cpu_backend.cpp): worker-thread streams,
// OpenBLAS GEMMs and memory streaming for compute, buffers for collectives. Private to real/.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "real/rig.hpp"

namespace gradsync::real::cpu_detail {

constexpr int kMaxCpuGemm = 2048;                 // largest square sgemm side; larger ops repeat it
constexpr std::size_t kCpuStaging = 64ull << 20;  // copy destination, reused cyclically

// Buffer: bytes that stay put (growing keeps the larger size). Work is issued on one thread and
// runs on the streams' threads, so a call that grows a buffer may find an earlier call of the same
// name still running on the old storage (DataParallel's "dp:replicate" chunks, issued back to
// back): growing retires the old storage rather than freeing it, and the device releases it when
// its streams are idle (CpuDevice::synchronize), as a stream-ordered allocator would.
struct Buffer {
  std::unique_ptr<char[]> data;
  std::size_t size = 0;
  std::vector<std::unique_ptr<char[]>> retired;  // replaced storage a stream may still use
  // get: at least n bytes, zero-filled when grown; RuntimeError naming the sizes when the host
  // has no more. `allocated` counts the live storage, not the retired.
  char* get(std::size_t n, double& allocated);
  void release_retired() { retired.clear(); }
};

inline std::size_t padded(Bytes b) { return static_cast<std::size_t>((b + 3) / 4 * 4); }

// CpuDevice: one CPU rank as a device: three worker-thread streams (compute, comm, copy) and the
// buffers its work reads and writes.
class CpuDevice final : public Device {
 public:
  CpuDevice(int index, Recorder& rec, Bytes params, Bytes grads)
      : index_(index), rec_(rec), compute_(rec), comm_(rec), copy_(rec) {
    params_.get(std::max<std::size_t>(64, static_cast<std::size_t>(params)), allocated_);
    grads_.get(std::max<std::size_t>(64, static_cast<std::size_t>(grads)), allocated_);
    peak_ = allocated_;
  }
  int index() const override { return index_; }
  void attach(const std::atomic<int>* it) { iteration_ = it; }

  WorkPtr compute(const ComputeOp& op, Stream s) override {
    StreamWorker::Task t;
    t.event = event(s, op.name, static_cast<Bytes>(op.bytes), op.bucket, -1);
    t.body = [this, op] { run_kernels(op); };
    return stream(s).push(std::move(t));
  }
  WorkPtr copy_to(Device& dst, const CopyOp& op, Stream s) override {
    auto& peer = static_cast<CpuDevice&>(dst);
    StreamWorker::Task t;
    t.event = event(s, op.name, op.bytes, -1, peer.index());
    t.body = [this, &peer, bytes = op.bytes] {
      if (&peer != this) stream_bytes(params_.data.get(), params_.size, peer.staging(), kCpuStaging, bytes);
    };
    return stream(s).push(std::move(t));
  }
  WorkPtr copy_from_host(const CopyOp& op, Stream s) override {
    StreamWorker::Task t;
    t.event = event(s, op.name, op.bytes, -1, -1);
    t.body = [this, bytes = op.bytes] { stream_bytes(pageable(), kCpuStaging, staging(), kCpuStaging, bytes); };
    return stream(s).push(std::move(t));
  }
  void stream_wait(Stream s, Work& w) override {
    StreamWorker::Task t;
    t.deps.push_back(share(w));
    stream(s).push(std::move(t));
  }
  // synchronize: every stream's work done; then no task holds storage a growth retired.
  void synchronize() override {
    for (StreamWorker* w : {&compute_, &comm_, &copy_})
      if (auto last = w->last()) last->wait();
    const std::lock_guard<std::mutex> lock(mutex_);
    workspace_.release_retired();
    for (auto& [name, b] : buffers_) b.release_retired();
  }

  // computing: whether this device's compute or copy stream is running a task now.
  bool computing() const { return compute_.running() || copy_.running(); }
  StreamWorker& stream(Stream s) {
    switch (s) {
      case Stream::kComm:
        return comm_;
      case Stream::kCopy:
        return copy_;
      default:
        return compute_;
    }
  }
  TraceEvent event(Stream s, const std::string& name, Bytes bytes, int bucket, int peer) const {
    return device_event(index_, iteration_, s, name, bytes, bucket, peer);
  }
  // buffer: the device buffer a collective named `name` uses (its bucket, its replicate chunk).
  char* buffer(const std::string& name, std::size_t bytes) {
    const std::lock_guard<std::mutex> lock(mutex_);
    char* p = buffers_[name].get(bytes, allocated_);
    peak_ = std::max(peak_, allocated_);
    return p;
  }
  double peak() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return peak_;
  }

 private:
  char* staging() {
    const std::lock_guard<std::mutex> lock(mutex_);
    char* p = staging_.get(kCpuStaging, allocated_);
    peak_ = std::max(peak_, allocated_);
    return p;
  }
  // pageable: the host memory an input is copied from (not device memory: not counted in peak).
  char* pageable() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return host_.get(kCpuStaging, host_allocated_);
  }
  // stream_bytes copies `bytes` from src to dst, each used cyclically.
  static void stream_bytes(const char* src, std::size_t src_size, char* dst, std::size_t dst_size, Bytes bytes);
  void run_kernels(const ComputeOp& op);
  void gemm(double flops);

  int index_;
  Recorder& rec_;
  const std::atomic<int>* iteration_ = nullptr;
  mutable std::mutex mutex_;
  double allocated_ = 0, peak_ = 0, host_allocated_ = 0;
  Buffer params_, grads_, staging_, workspace_, host_;
  std::map<std::string, Buffer> buffers_;
  // Declared last: their threads stop (drained) before the buffers go.
  StreamWorker compute_, comm_, copy_;
};

// comm_task: a collective's task on the comm stream, after the compute stream's last work.
StreamWorker::Task comm_task(CpuDevice& d, const CollectiveOp& op);

}  // namespace gradsync::real::cpu_detail
