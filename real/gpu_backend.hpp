// gpu_backend.hpp: whether this build has the GPU backend (CUDA + NCCL) and what it sees.
//
// Callers never need #ifdef: without CUDA the same function exists and says why the backend is
// missing (the model is Google Benchmark's optional perf-counter backend).
//
//   const auto info = gradsync::real::gpu_backend_info();
//   if (!info.compiled) std::puts(info.summary.c_str());   // "GPU backend: not built (...)"
#pragma once

#include <string>

namespace gradsync::real {

// GpuBackendInfo describes the GPU backend of this build and this machine.
struct GpuBackendInfo {
  // compiled is true when gradsync was built with CUDA and NCCL.
  bool compiled = false;
  // visible_gpus counts the GPUs the CUDA runtime sees now (0 without a driver or a GPU).
  int visible_gpus = 0;
  // summary is one line for people: versions, GPU count, or why there is no backend or no GPU.
  std::string summary;
};

// gpu_backend_info queries the CUDA runtime and NCCL (when built with them). Never throws: a
// missing driver is reported in `summary` with the runtime's own error text.
GpuBackendInfo gpu_backend_info();

// GpuProps: what the CUDA runtime says about one GPU.
struct GpuProps {
  std::string name;    // "NVIDIA H100 80GB HBM3"
  int sm_version = 0;  // compute capability x 10
  double memory_bytes = 0;
};
// gpu_props: RuntimeError without the backend or without that device.
GpuProps gpu_props(int device);

}  // namespace gradsync::real
