// engine.cpp: create the SimGrid engine with gradsync's exact network configuration.
#include "sim/engine.hpp"

#include <malloc.h>

#include <string>
#include <vector>

#include "core/error.hpp"

namespace gradsync::sim {

std::unique_ptr<simgrid::s4u::Engine> create_engine(int ranks) {
  if (simgrid::s4u::Engine::has_instance()) {
    throw RuntimeError("sim: a SimGrid engine already exists in this process; run one simulation per process");
  }
  // SimGrid reads its options from argv; it keeps pointers into it, hence the statics.
  static std::vector<std::string> args {
    "gradsync", "--log=root.thres:error",
        "--log=root.fmt:%m%n"
#if defined(GRADSYNC_SANITIZED)
        // AddressSanitizer cannot follow SimGrid's hand-made stack
        // switches; threads it can. The factory is chosen when the
        // engine starts, so it must come in through argv.
        ,
        "--cfg=contexts/factory:thread"
#endif
  };
  if (ranks > kUnguardedStacksRanks) {
    args.push_back("--cfg=contexts/guard-size:0");
    // 1 MiB stacks (SimGrid's default is 8), below the mmap threshold: from the heap, no mapping
    // of their own. The 16,384-GPU GPT-2 run ran with them.
    args.push_back("--cfg=contexts/stack-size:1024");
    (void)::mallopt(M_MMAP_THRESHOLD, 64 << 20);
    // SimGrid zeroes a stack (calloc); from fresh heap memory glibc skips that but for what was
    // left of the heap's top, by default up to 128 KiB of padding: every stack would touch that
    // much. Without the padding a stack costs only the pages its actor uses.
    (void)::mallopt(M_TOP_PAD, 0);
  }
  static std::vector<char*> argv;
  argv.clear();
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  // glibc's fastbins off: a simulation makes millions of small blocks (trace events, tasks,
  // SimGrid's activities) and frees them in another order, and every larger request then
  // consolidates the fastbins first (malloc_consolidate: 8% of a 1024-GPU iteration in perf).
  // Off, the 1024-GPU GPT-2 iteration takes 1.22-1.23 s instead of 1.45-1.51 s (bench/sim_bench,
  // alternating runs); no change at 8 and 64 GPUs. One engine per process, so the process is the
  // simulation's.
  (void)::mallopt(M_MXFAST, 0);
  auto engine = std::make_unique<simgrid::s4u::Engine>(&argc, argv.data());
  simgrid::s4u::Engine::set_config("network/model:CM02");
  simgrid::s4u::Engine::set_config("network/crosstraffic:0");
  simgrid::s4u::Engine::set_config("network/TCP-gamma:0");
  return engine;
}

}  // namespace gradsync::sim
