// gpu_backend_cuda.cu: gpu_backend_info() for builds with CUDA and NCCL.
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "real/gpu_backend.hpp"

namespace gradsync::real {

GpuBackendInfo gpu_backend_info() {
  GpuBackendInfo info;
  info.compiled = true;
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  int nccl = 0;
  ncclGetVersion(&nccl);
  // NCCL encodes 2.27.3 as 22703 (major*10000 + minor*100 + patch) since 2.9.
  std::string versions = "CUDA runtime " + std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10) +
                         ", NCCL " + std::to_string(nccl / 10000) + "." + std::to_string(nccl % 10000 / 100) + "." +
                         std::to_string(nccl % 100);
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    info.summary = "GPU backend: built (" + versions +
                   "); no GPU visible: cudaGetDeviceCount: " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return info;
  }
  info.visible_gpus = count;
  info.summary = "GPU backend: built (" + versions + "); " + std::to_string(count) + " GPU(s) visible";
  if (count > 0) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) info.summary += std::string(", GPU0 ") + prop.name;
  }
  return info;
}

}  // namespace gradsync::real
// TEMP
#include "core/error.hpp"
#include "real/rig.hpp"
namespace gradsync::real {
GpuProps gpu_props(int) { throw RuntimeError("todo"); }
std::unique_ptr<Rig> make_gpu_rig(const RigOptions&) { throw RuntimeError("todo"); }
}
