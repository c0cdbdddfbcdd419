// host_threads_test.cpp: RealHost::parallel, which runs `--launch local`'s rank threads, starts
// every thread before any runs; when the system refuses one, none has run and the error says how
// many were asked for.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <string>

#include "core/error.hpp"
#include "real/engine.hpp"

namespace gradsync::real {
namespace {

TEST(RealHost, ParallelRunsEveryRankOnce) {
  Recorder rec;
  RealHost host(rec, {0});
  std::atomic<int> sum{0};
  host.parallel(16, [&](int i) { sum += i + 1; });
  EXPECT_EQ(sum.load(), 16 * 17 / 2);
}

TEST(RealHost, ARefusedThreadStopsTheOthersBeforeTheyRun) {
#if defined(GRADSYNC_SANITIZED)
  GTEST_SKIP() << "the sanitizers reserve terabytes of address space: an address-space limit cannot apply";
#else
  // Thread stacks are 8 MiB of address space each: with the limit 256 MiB above what the process
  // maps now, the system refuses one of 1000 threads.
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_AS, &old), 0);
  std::size_t mapped = 0;
  {
    FILE* f = std::fopen("/proc/self/statm", "r");
    ASSERT_NE(f, nullptr);
    unsigned long pages = 0;
    ASSERT_EQ(std::fscanf(f, "%lu", &pages), 1);
    std::fclose(f);
    mapped = pages * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  }
  rlimit tight = old;
  tight.rlim_cur = mapped + (256ull << 20);
  ASSERT_EQ(::setrlimit(RLIMIT_AS, &tight), 0);
  Recorder rec;
  RealHost host(rec, {0});
  std::atomic<int> ran{0};
  std::string error;
  try {
    host.parallel(1000, [&](int) { ++ran; });
  } catch (const RuntimeError& e) {
    error = e.what();
  }
  ::setrlimit(RLIMIT_AS, &old);
  EXPECT_EQ(ran.load(), 0) << "ranks ran although not all of them could start";
  EXPECT_NE(error.find("cannot start 1000 rank threads in one process: the system refused thread "), std::string::npos)
      << error;
  EXPECT_NE(error.find("use fewer (--world-size) or one process per rank (--launch mpi)"), std::string::npos) << error;
#endif
}

}  // namespace
}  // namespace gradsync::real
