// gpu_kernels.hpp: the GPU engine's own CUDA kernels, compiled by nvcc (gpu_kernels.cu) and
// launched from host C++ (gpu_backend_cuda.cpp). Internal to real/.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace gradsync::real {

// launch_touch: a memory-bound kernel on `stream`: dst[i] = src[i] for `words` 16-byte words
// (reads and writes 32 bytes per word). Returns the launch's error.
cudaError_t launch_touch(const void* src, void* dst, std::size_t words, cudaStream_t stream);

}  // namespace gradsync::real
