// gpu_backend_none.cpp: the GPU backend's entry points for builds without CUDA
// (GRADSYNC_WITH_CUDA=OFF or no CUDA under /usr/local/cuda): each says why it is missing.
#include "core/error.hpp"
#include "real/gpu_backend.hpp"
#include "real/rig.hpp"

namespace gradsync::real {

namespace {
constexpr const char* kNotBuilt =
    "GPU backend: not built (configure with CUDA 13 and NCCL under /usr/local/cuda, GRADSYNC_WITH_CUDA=AUTO|ON)";
}

GpuBackendInfo gpu_backend_info() {
  GpuBackendInfo info;
  info.summary = kNotBuilt;
  return info;
}

GpuProps gpu_props(int) { throw RuntimeError(kNotBuilt); }

std::unique_ptr<Rig> make_gpu_rig(const RigOptions&) { throw RuntimeError(kNotBuilt); }

}  // namespace gradsync::real
