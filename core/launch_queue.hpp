// launch_queue.hpp: CUDA's asynchronous kernel launches (CUDA C++ Programming Guide, "Asynchronous
// Concurrent Execution": a launch returns to the host before the kernel completes). A host thread
// issues a piece of work's kernels one after another while the GPU runs those issued before, so
// the host runs ahead of the GPU while the GPU is the slower, and the GPU waits for launches while
// the host is; neither is a per-layer maximum.
//
//   LaunchQueue q;                                        // host and GPU both at 0
//   q.issue(/*host_s=*/1e-3, /*gpu_s=*/10e-3, 10);         // GPU-bound: ends at 10.1 ms
//   q.issue(/*host_s=*/5e-3, /*gpu_s=*/1e-3, 100);         // host-bound alone, but the host is 9 ms ahead
//   q.end() == 11.1e-3;                                    // (each op at the longer of the two: 15 ms)
//
// Work of k kernels, host time h and GPU time g, issued from host time I with its first kernel
// issued at I + h/k and the kernels spread evenly: it starts when that kernel is issued and the
// GPU is free, and ends no sooner than g after its start nor than its last kernel's issue (I + h)
// plus that kernel's g/k.
#pragma once

#include <algorithm>

namespace gradsync {

// LaunchWindow: when a piece of work can start and end, relative to the host time it is issued
// from.
struct LaunchWindow {
  double first_issue = 0;  // its first kernel is issued this long after the host begins: h / k
  double last_end = 0;     // its last kernel ends no sooner than this after: h + g / k
};

inline LaunchWindow launch_window(double host_s, double gpu_s, int kernels) {
  const double k = std::max(1, kernels);
  const double h = std::max(0.0, host_s), g = std::max(0.0, gpu_s);
  return {h / k, h + g / k};
}

// LaunchQueue: one host thread issuing to one GPU stream.
class LaunchQueue {
 public:
  // issue: work of `kernels` kernels costing the host host_s and the GPU gpu_s.
  void issue(double host_s, double gpu_s, int kernels) {
    const LaunchWindow w = launch_window(host_s, gpu_s, kernels);
    const double start = std::max(gpu_, host_ + w.first_issue);
    gpu_ = std::max(start + std::max(0.0, gpu_s), host_ + w.last_end);
    host_ += std::max(0.0, host_s);
  }
  // wait: the host waits for the stream (cudaStreamSynchronize; a copy from pageable memory).
  void wait() { host_ = std::max(host_, gpu_); }
  double host() const { return host_; }  // when the host has issued everything so far
  double end() const { return gpu_; }    // when the GPU has run everything so far

 private:
  double host_ = 0, gpu_ = 0;
};

}  // namespace gradsync
