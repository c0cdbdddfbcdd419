// cublas_loader.cpp: cuBLAS through dlopen (see cublas_loader.hpp for why).
#include "real/cublas_loader.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <mutex>
#include <type_traits>
#include <vector>

#include "core/error.hpp"

#ifndef GRADSYNC_CUBLAS_DIR
#define GRADSYNC_CUBLAS_DIR ""
#endif

namespace gradsync::real {
namespace {

// The soname of the cuBLAS these headers declare: libcublas.so.<major>.
std::string soname() { return fmt::format("libcublas.so.{}", CUBLAS_VER_MAJOR); }

Cublas load() {
  std::vector<std::string> tried;
  const std::string dir = GRADSYNC_CUBLAS_DIR;
  std::vector<std::string> candidates;
  if (!dir.empty()) candidates.push_back(dir + "/" + soname());
  candidates.push_back(soname());
  void* handle = nullptr;
  Cublas b;
  for (const std::string& c : candidates) {
    dlerror();
    handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      b.path = c;
      break;
    }
    const char* why = dlerror();
    tried.push_back(fmt::format("{} ({})", c, why != nullptr ? why : "not loaded"));
  }
  if (handle == nullptr) {
    throw RuntimeError(
        fmt::format("cuBLAS could not be loaded: {}; expected CUDA {}'s cuBLAS under {} or on "
                    "the loader's path (LD_LIBRARY_PATH)",
                    fmt::join(tried, "; "), CUBLAS_VER_MAJOR, dir.empty() ? "/usr/local/cuda" : dir));
  }
  // The library stays loaded for the process's life: handles made from it outlive any scope here.
  const auto symbol = [&](auto& fn, const char* name) {
    dlerror();
    void* p = dlsym(handle, name);
    if (p == nullptr) {
      const char* why = dlerror();
      throw RuntimeError(fmt::format("{}: symbol {} not found ({}); expected cuBLAS {}", b.path, name,
                                     why != nullptr ? why : "null", CUBLAS_VER_MAJOR));
    }
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  try {
    symbol(b.create, "cublasCreate_v2");
    symbol(b.destroy, "cublasDestroy_v2");
    symbol(b.set_stream, "cublasSetStream_v2");
    symbol(b.gemm_ex, "cublasGemmEx");
    symbol(b.status_string, "cublasGetStatusString");
  } catch (...) {
    dlclose(handle);  // a library without these symbols is no use: not kept loaded, as a failed load is not cached
    throw;
  }
  return b;
}

}  // namespace

const Cublas& cublas() {
  // A failed load is not cached: every caller gets the error, each time naming the files tried.
  static std::mutex m;
  static Cublas* loaded = nullptr;
  std::lock_guard<std::mutex> lock(m);
  if (loaded == nullptr) loaded = new Cublas(load());  // never freed: the library is never unloaded
  return *loaded;
}

}  // namespace gradsync::real
