// cpu_device.cpp: the CPU engine's device: buffers, memory streaming and OpenBLAS GEMMs
// (cpu_device.hpp).
#include "real/cpu_device.hpp"

#include <cblas.h>

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "core/error.hpp"
#include "core/units.hpp"

namespace gradsync::real::cpu_detail {

char* Buffer::get(std::size_t n, double& allocated) {
  if (n > size) {
    std::unique_ptr<char[]> grown;
    try {
      grown = std::make_unique<char[]>(n);  // zero-filled: every page is touched now, not mid-step
    } catch (const std::bad_alloc&) {
      throw RuntimeError(
          fmt::format("out of host memory: a CPU rank could not allocate {} more (it already "
                      "holds {}); use fewer ranks per process "
                      "(--world-size, or --launch mpi across machines) or a smaller model or size",
                      human_bytes(static_cast<double>(n)), human_bytes(allocated)));
    }
    if (data) retired.push_back(std::move(data));
    data = std::move(grown);
    allocated += static_cast<double>(n) - static_cast<double>(size);
    size = n;
  }
  return data.get();
}

// stream_bytes copies `bytes` from src to dst, each used cyclically.
void CpuDevice::stream_bytes(const char* src, std::size_t src_size, char* dst, std::size_t dst_size, Bytes bytes) {
  std::size_t left = static_cast<std::size_t>(bytes), si = 0, di = 0;
  while (left > 0) {
    const std::size_t n = std::min({left, src_size - si, dst_size - di});
    std::memcpy(dst + di, src + si, n);
    left -= n;
    si = (si + n) % src_size;
    di = (di + n) % dst_size;
  }
}

void CpuDevice::run_kernels(const ComputeOp& op) {
  const int k = std::max(1, op.kernels);
  for (int i = 0; i < k; ++i) {
    if (op.kind != OpKind::kMemory && op.flops > 0) {
      gemm(op.flops / k);
    } else {
      // A memory-bound kernel reads and writes op.bytes in all: half read from the gradients,
      // half written into the parameters.
      stream_bytes(grads_.data.get(), grads_.size, params_.data.get(), params_.size,
                   static_cast<Bytes>(op.bytes / k / 2));
    }
  }
}

void CpuDevice::gemm(double flops) {
  const double cube = flops / 2.0;
  const double calls = std::max(1.0, std::ceil(cube / (static_cast<double>(kMaxCpuGemm) * kMaxCpuGemm * kMaxCpuGemm)));
  const int n = std::max(1, static_cast<int>(std::lround(std::cbrt(cube / calls))));
  const std::size_t bytes = 3 * static_cast<std::size_t>(n) * static_cast<std::size_t>(n) * sizeof(float);
  float* a = nullptr;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    a = reinterpret_cast<float*>(workspace_.get(bytes, allocated_));
    peak_ = std::max(peak_, allocated_);
  }
  float* b = a + static_cast<std::size_t>(n) * n;
  float* c = b + static_cast<std::size_t>(n) * n;
  for (int i = 0; i < static_cast<int>(calls); ++i)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
}

StreamWorker::Task comm_task(CpuDevice& d, const CollectiveOp& op) {
  StreamWorker::Task t;
  if (auto last = d.stream(Stream::kCompute).last()) t.deps.push_back(last);
  t.event = d.event(Stream::kComm, op.name, op.bytes, op.bucket, -1);
  return t;
}

}  // namespace gradsync::real::cpu_detail
