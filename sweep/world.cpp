// world.cpp: world.hpp.
#include "sweep/world.hpp"

#include <signal.h>

#include <fmt/format.h>

#include <cstdlib>
#include <exception>
#include <utility>

namespace gradsync::sweep {
namespace {

volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_signal(int sig) { g_signal = sig; }

}  // namespace

int interrupt_signal() { return g_signal; }

World world_from_environment() {
  const std::pair<const char*, const char*> vars[] = {
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, {"PMI_RANK", "PMI_SIZE"}, {"SLURM_PROCID", "SLURM_NTASKS"}};
  for (const auto& [rank_var, size_var] : vars) {
    const char* r = std::getenv(rank_var);
    const char* n = std::getenv(size_var);
    if (!r || !n) continue;
    World w;
    try {
      w.rank = std::stoi(r);
      w.size = std::stoi(n);
    } catch (const std::exception&) {
      throw UsageError(fmt::format("{}=\"{}\", {}=\"{}\": expected integers", rank_var, r, size_var, n));
    }
    if (w.size < 1 || w.rank < 0 || w.rank >= w.size) {
      throw UsageError(fmt::format("{}={} and {}={}: expected 0 <= rank < size", rank_var, r, size_var, n));
    }
    return w;
  }
  return {};
}

SignalGuard::SignalGuard() {
  g_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 2; ++i) {
    ::sigaction(kSignals[i], nullptr, &old_[i]);
    if (old_[i].sa_handler != SIG_IGN) ::sigaction(kSignals[i], &sa, nullptr);
  }
}

SignalGuard::~SignalGuard() {
  for (int i = 0; i < 2; ++i) ::sigaction(kSignals[i], &old_[i], nullptr);
}

}  // namespace gradsync::sweep
