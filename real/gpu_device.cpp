// gpu_device.cpp: GpuDevice, a GPU rank's device (gpu_device.hpp), and the checked CUDA, NCCL and
// cuBLAS calls. Built only with CUDA.
#include "real/gpu_device.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "real/cublas_loader.hpp"
#include "real/gpu_kernels.hpp"

namespace gradsync::real::gpu_detail {

void check_cuda(cudaError_t e, const char* call, const char* file, int line, const Site& at) {
  if (e == cudaSuccess) return;
  throw RuntimeError(fmt::format("host {}, rank {}: {} failed at {}:{}: {}: {}", at.host, at.rank, call, file, line,
                                 cudaGetErrorName(e), cudaGetErrorString(e)));
}
void check_nccl(ncclResult_t e, const char* call, const char* file, int line, const Site& at) {
  if (e == ncclSuccess) return;
  throw RuntimeError(fmt::format("host {}, rank {}: {} failed at {}:{}: {}", at.host, at.rank, call, file, line,
                                 ncclGetErrorString(e)));
}
void check_cublas(cublasStatus_t e, const char* call, const char* file, int line, const Site& at) {
  if (e == CUBLAS_STATUS_SUCCESS) return;
  throw RuntimeError(fmt::format("host {}, rank {}: {} failed at {}:{}: {}", at.host, at.rank, call, file, line,
                                 cublas().status_string(e)));
}

void CudaWork::wait() {
  for (cudaEvent_t e : events_) {
    const cudaError_t err = cudaEventSynchronize(e);
    if (err != cudaSuccess)
      throw RuntimeError(fmt::format("cudaEventSynchronize: {}: {}", cudaGetErrorName(err), cudaGetErrorString(err)));
  }
}
bool CudaWork::done() const {
  for (cudaEvent_t e : events_)
    if (cudaEventQuery(e) != cudaSuccess) return false;
  return true;
}

GpuDevice::GpuDevice(int index, int cuda_device, Recorder& rec, const RigOptions& o)
    : index_(index), cuda_(cuda_device), rec_(rec), site_{o.host_name, index} {
  CUDA(cudaSetDevice(cuda_));
  for (cudaStream_t* s : {&compute_, &comm_, &copy_}) CUDA(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
  CUBLAS(cublas().create(&blas_));
  CUBLAS(cublas().set_stream(blas_, compute_));
  gemm_type_ = o.precision == "bf16" ? CUDA_R_16BF : o.precision == "fp16" ? CUDA_R_16F : CUDA_R_32F;
  compute_type_ = o.precision == "tf32" ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  params_ = alloc(std::max<std::size_t>(256, static_cast<std::size_t>(o.parameter_bytes)), "parameters");
  params_size_ = std::max<std::size_t>(256, static_cast<std::size_t>(o.parameter_bytes));
  grads_ = alloc(std::max<std::size_t>(256, static_cast<std::size_t>(o.gradient_bytes)), "gradients");
  grads_size_ = std::max<std::size_t>(256, static_cast<std::size_t>(o.gradient_bytes));
  CUDA(cudaEventCreate(&epoch_));
  CUDA(cudaDeviceSynchronize());
  CUDA(cudaEventRecord(epoch_, compute_));
  CUDA(cudaEventSynchronize(epoch_));
  host_epoch_ = now_s();
}

GpuDevice::~GpuDevice() {
  cudaSetDevice(cuda_);
  cudaDeviceSynchronize();
  for (auto& [p, n] : allocations_) cudaFree(p);
  if (pinned_) cudaFreeHost(pinned_);
  for (cudaEvent_t e : pool_) cudaEventDestroy(e);
  cudaEventDestroy(epoch_);
  cublas().destroy(blas_);
  for (cudaStream_t s : {compute_, comm_, copy_}) cudaStreamDestroy(s);
}

WorkPtr GpuDevice::compute(const ComputeOp& op, Stream s) {
  CUDA(cudaSetDevice(cuda_));
  const int k = std::max(1, op.kernels);
  return timed(s, event(s, op.name, static_cast<Bytes>(op.bytes), op.bucket, -1), [&] {
    for (int i = 0; i < k; ++i) {
      if (op.kind != OpKind::kMemory && op.flops > 0) {
        gemm(op.flops / k, stream(s));
      } else {
        memory(static_cast<std::size_t>(op.bytes / k / 2), stream(s));
      }
    }
  });
}

WorkPtr GpuDevice::copy_to(Device& dst, const CopyOp& op, Stream s) {
  auto& peer = static_cast<GpuDevice&>(dst);
  CUDA(cudaSetDevice(cuda_));
  return timed(s, event(s, op.name, op.bytes, -1, peer.index()), [&] {
    if (&peer == this) return;
    char* to = peer.staging(static_cast<std::size_t>(op.bytes));
    cyclic(op.bytes, params_size_, [&](std::size_t off, std::size_t n) {
      CUDA(cudaMemcpyPeerAsync(to + 0, peer.cuda(), params_ + off, cuda_, n, stream(s)));
    });
  });
}

WorkPtr GpuDevice::copy_from_host(const CopyOp& op, Stream s) {
  CUDA(cudaSetDevice(cuda_));
  constexpr std::size_t kPinned = 64ull << 20;
  if (!pinned_) CUDA(cudaMallocHost(&pinned_, kPinned));
  char* to = staging(std::min<std::size_t>(kPinned, static_cast<std::size_t>(op.bytes)));
  return timed(s, event(s, op.name, op.bytes, -1, -1), [&] {
    cyclic(op.bytes, kPinned, [&](std::size_t, std::size_t n) {
      CUDA(cudaMemcpyAsync(to, pinned_, n, cudaMemcpyHostToDevice, stream(s)));
    });
  });
}

void GpuDevice::stream_wait(Stream s, Work& w) {
  CUDA(cudaSetDevice(cuda_));
  for (cudaEvent_t e : static_cast<CudaWork&>(w).events()) CUDA(cudaStreamWaitEvent(stream(s), e, 0));
}

void GpuDevice::synchronize() {
  CUDA(cudaSetDevice(cuda_));
  for (cudaStream_t st : {compute_, comm_, copy_}) CUDA(cudaStreamSynchronize(st));
  flush();
}

cudaEvent_t GpuDevice::compute_point() {
  const std::lock_guard<std::mutex> lock(mutex_);
  cudaEvent_t e = take();
  CUDA(cudaEventRecord(e, compute_));
  spent_.push_back(e);
  return e;
}

char* GpuDevice::buffer(const std::string& name, std::size_t bytes) {
  const std::lock_guard<std::mutex> lock(mutex_);
  auto& [p, n] = buffers_[name];
  if (bytes > n) {
    if (p) release(p);
    p = alloc(bytes, name);
    n = bytes;
  }
  return p;
}

double GpuDevice::capacity() const {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, cuda_);
  return static_cast<double>(prop.totalGlobalMem);
}

char* GpuDevice::alloc(std::size_t bytes, const std::string& what) {
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw RuntimeError(
        fmt::format("host {}, rank {}: out of GPU memory: cudaMalloc of {} bytes for {} failed ({} "
                    "bytes held): {}: {}",
                    site_.host, site_.rank, bytes, what, allocated_, cudaGetErrorName(e), cudaGetErrorString(e)));
  }
  allocations_[p] = bytes;
  allocated_ += static_cast<double>(bytes);
  peak_ = std::max(peak_, allocated_);
  return static_cast<char*>(p);
}

void GpuDevice::release(char* p) {
  cudaFree(p);
  allocated_ -= static_cast<double>(allocations_[p]);
  allocations_.erase(p);
}

char* GpuDevice::staging(std::size_t bytes) {
  constexpr std::size_t kGpuStaging = 256ull << 20;
  return buffer("#staging", std::min(std::max<std::size_t>(bytes, 256), kGpuStaging));
}

void GpuDevice::memory(std::size_t half, cudaStream_t st) {
  cyclic(half, std::min(params_size_, grads_size_), [&](std::size_t off, std::size_t n) {
    const std::size_t words = std::max<std::size_t>(1, n / 16);
    CUDA(launch_touch(grads_ + off / 16 * 16, params_ + off / 16 * 16, words, st));
  });
}

void GpuDevice::gemm(double flops, cudaStream_t st) {
  const double cube = flops / 2.0;
  const double calls = std::max(1.0, std::ceil(cube / (static_cast<double>(kMaxGpuGemm) * kMaxGpuGemm * kMaxGpuGemm)));
  const int n = std::max(1, static_cast<int>(std::lround(std::cbrt(cube / calls))));
  const std::size_t elem = gemm_type_ == CUDA_R_32F ? 4 : 2;
  const std::size_t mat = static_cast<std::size_t>(n) * static_cast<std::size_t>(n) * elem;
  char* a = nullptr;
  {
    auto& [p, size] = buffers_["#gemm"];
    if (3 * mat > size) {
      if (p) release(p);
      p = alloc(3 * mat, "GEMM operands");
      size = 3 * mat;
    }
    a = p;
  }
  const float alpha = 1.0f, beta = 0.0f;
  CUBLAS(cublas().set_stream(blas_, st));
  for (int i = 0; i < static_cast<int>(calls); ++i) {
    CUBLAS(cublas().gemm_ex(blas_, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, gemm_type_, n, a + mat, gemm_type_, n,
                            &beta, a + 2 * mat, gemm_type_, n, compute_type_, CUBLAS_GEMM_DEFAULT));
  }
}

cudaEvent_t GpuDevice::take() {
  if (!free_.empty()) {
    cudaEvent_t e = free_.back();
    free_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  CUDA(cudaEventCreate(&e));
  pool_.push_back(e);
  return e;
}

void GpuDevice::flush() {
  const std::lock_guard<std::mutex> lock(mutex_);
  for (auto& p : pending_) {
    float a = 0, b = 0;
    CUDA(cudaEventElapsedTime(&a, epoch_, p.start));
    CUDA(cudaEventElapsedTime(&b, epoch_, p.end));
    p.event.start_s = host_epoch_ + a / 1e3;
    p.event.end_s = host_epoch_ + b / 1e3;
    rec_.add(std::move(p.event));
    free_.push_back(p.start);
    free_.push_back(p.end);
  }
  pending_.clear();
  for (cudaEvent_t e : spent_) free_.push_back(e);
  spent_.clear();
}
}  // namespace gradsync::real::gpu_detail
