// gpu_backend_none.cpp: gpu_backend_info() for builds without CUDA (GRADSYNC_WITH_CUDA=OFF or no
// CUDA under /usr/local/cuda).
#include "real/gpu_backend.hpp"

namespace gradsync::real {

GpuBackendInfo gpu_backend_info() {
  GpuBackendInfo info;
  info.summary =
      "GPU backend: not built (configure with CUDA 13 and NCCL under /usr/local/cuda, GRADSYNC_WITH_CUDA=AUTO|ON)";
  return info;
}

}  // namespace gradsync::real
