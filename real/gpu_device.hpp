// gpu_device.hpp: a GPU rank's device for the GPU engine (gpu_backend_cuda.cpp): a compute, an
// NCCL and a copy stream, cuBLAS GEMMs and memory kernels for compute, every op timed with CUDA
// events that become host-clock times when the device synchronizes. Private to real/, and built
// only with CUDA (GRADSYNC_HAVE_CUDA).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "real/engine.hpp"
#include "real/rig.hpp"

namespace gradsync::real::gpu_detail {

// Where an error happened, for its message.
struct Site {
  std::string host;
  int rank = 0;
};

// check_*: RuntimeError naming the host, the rank, the call, file:line and the library's text.
void check_cuda(cudaError_t e, const char* call, const char* file, int line, const Site& at);
void check_nccl(ncclResult_t e, const char* call, const char* file, int line, const Site& at);
void check_cublas(cublasStatus_t e, const char* call, const char* file, int line, const Site& at);
// The checked calls, where a `site_` (a Site) is in scope.
#define CUDA(call) ::gradsync::real::gpu_detail::check_cuda((call), #call, __FILE__, __LINE__, site_)
#define NCCL(call) ::gradsync::real::gpu_detail::check_nccl((call), #call, __FILE__, __LINE__, site_)
#define CUBLAS(call) ::gradsync::real::gpu_detail::check_cublas((call), #call, __FILE__, __LINE__, site_)

constexpr int kMaxGpuGemm = 8192;  // largest square GEMM side; larger ops repeat it

// CudaWork: complete when every one of its events has (the events may be on several GPUs).
class CudaWork final : public RealWork {
 public:
  explicit CudaWork(std::vector<cudaEvent_t> events) : events_(std::move(events)) {}
  void wait() override;
  bool done() const override;
  const std::vector<cudaEvent_t>& events() const { return events_; }

 private:
  std::vector<cudaEvent_t> events_;  // owned by the devices' event pools
};

// GpuDevice: one GPU of this process.
class GpuDevice final : public Device {
 public:
  GpuDevice(int index, int cuda_device, Recorder& rec, const RigOptions& o);
  ~GpuDevice() override;
  int index() const override { return index_; }
  int cuda() const { return cuda_; }
  void attach(const std::atomic<int>* it) { iteration_ = it; }
  const Site& site() const { return site_; }

  WorkPtr compute(const ComputeOp& op, Stream s) override;
  WorkPtr copy_to(Device& dst, const CopyOp& op, Stream s) override;
  WorkPtr copy_from_host(const CopyOp& op, Stream s) override;
  void stream_wait(Stream s, Work& w) override;
  void synchronize() override;

  cudaStream_t stream(Stream s) const { return s == Stream::kComm ? comm_ : s == Stream::kCopy ? copy_ : compute_; }
  TraceEvent event(Stream s, const std::string& name, Bytes bytes, int bucket, int peer) const {
    return device_event(index_, iteration_, s, name, bytes, bucket, peer);
  }
  // timed: record start, enqueue, record end on stream s; the end event is the work.
  template <class F>
  std::shared_ptr<CudaWork> timed(Stream s, TraceEvent e, F&& enqueue) {
    const std::lock_guard<std::mutex> lock(mutex_);
    cudaEvent_t start = take(), end = take();
    CUDA(cudaEventRecord(start, stream(s)));
    enqueue();
    CUDA(cudaEventRecord(end, stream(s)));
    pending_.push_back({start, end, std::move(e)});
    return std::make_shared<CudaWork>(std::vector<cudaEvent_t>{end});
  }
  // compute_point: an event on the compute stream now (c10d's NCCL stream waits for it).
  cudaEvent_t compute_point();
  // buffer: at least `bytes` of GPU memory kept under `name` (grown, never shrunk).
  char* buffer(const std::string& name, std::size_t bytes);
  double peak() const { return peak_; }
  double capacity() const;

 private:
  char* alloc(std::size_t bytes, const std::string& what);
  void release(char* p);
  char* staging(std::size_t bytes);
  // cyclic: `bytes` in pieces that wrap around a buffer of `size`.
  template <class F>
  static void cyclic(Bytes bytes, std::size_t size, F&& piece) {
    std::size_t left = static_cast<std::size_t>(bytes), off = 0;
    while (left > 0) {
      const std::size_t n = std::min(left, size - off);
      piece(off, n);
      left -= n;
      off = (off + n) % size;
    }
  }
  void memory(std::size_t half, cudaStream_t st);
  void gemm(double flops, cudaStream_t st);
  cudaEvent_t take();
  // flush: completed events become trace events on the host clock; their CUDA events are reused.
  void flush();

  struct Pending {
    cudaEvent_t start, end;
    TraceEvent event;
  };
  int index_, cuda_;
  Recorder& rec_;
  Site site_;
  const std::atomic<int>* iteration_ = nullptr;
  std::mutex mutex_;
  cudaStream_t compute_ = nullptr, comm_ = nullptr, copy_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  cudaDataType_t gemm_type_ = CUDA_R_32F;
  cublasComputeType_t compute_type_ = CUBLAS_COMPUTE_32F;
  char* params_ = nullptr;
  char* grads_ = nullptr;
  std::size_t params_size_ = 0, grads_size_ = 0;
  void* pinned_ = nullptr;
  std::map<void*, std::size_t> allocations_;
  std::map<std::string, std::pair<char*, std::size_t>> buffers_;
  double allocated_ = 0, peak_ = 0;
  cudaEvent_t epoch_ = nullptr;
  double host_epoch_ = 0;
  std::vector<cudaEvent_t> pool_, free_, spent_;
  std::deque<Pending> pending_;
};

}  // namespace gradsync::real::gpu_detail
