// cublas_loader.hpp: cuBLAS resolved when real mode first needs it (dlopen), not linked.
//
// Linked, libcublas pulls in libcublasLt, whose static constructors took 0.35-0.6 s and 250 MB of
// memory at every process start (perf, 2026-12-02: 69% of `gradsync --version`), so every command,
// every simulation, paid for a library that only real mode on a GPU calls. CUDA's runtime and NCCL
// stay linked: together they start in 15 ms.
//
//   const Cublas& b = cublas();       // loads libcublas.so.13 once; RuntimeError if it cannot
//   b.create(&handle);
#pragma once

#include <cublas_v2.h>

#include <string>

namespace gradsync::real {

// Cublas: the cuBLAS functions real mode calls, as the library exports them (cublas_v2.h's names
// are macros for the _v2 symbols).
struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  // cublasGemmEx is overloaded in C++ (a wrapper taking cudaDataType as the compute type): the
  // library's own signature.
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                    const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                    cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  GemmEx gemm_ex = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  std::string path;  // the file loaded
};

// cublas: the library, loaded on the first call (thread-safe): the toolkit's own copy first (the
// directory CMake found it in), else the soname through the loader's search. RuntimeError naming
// each file tried and dlerror()'s reason when none loads or a symbol is missing.
const Cublas& cublas();

}  // namespace gradsync::real
