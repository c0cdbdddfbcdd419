// world.hpp: a sweep's place among its processes (mpirun, srun) and how it is interrupted
// (SIGINT, SIGTERM), for sweep.cpp.
#pragma once

#include <csignal>
#include <string>

#include "core/error.hpp"

namespace gradsync::sweep {

// World: this process's place under mpirun (OpenMPI, PMI) or srun; rank 0 of 1 otherwise.
struct World {
  int rank = 0;
  int size = 1;
};

// world_from_environment: the rank and size that OMPI_COMM_WORLD_*, PMI_* or SLURM_* give; a
// UsageError naming the variables when they are not integers with 0 <= rank < size.
World world_from_environment();

// Interruption. Ctrl-C (SIGINT) or SIGTERM while points run: the points saved so far stay in
// summary.csv (each is written as it finishes), the running children are killed, and the sweep
// ends with a message saying how to finish it (--resume) and the shell's status for the signal
// (128 + its number). A signal the caller ignored (nohup, a background job) stays ignored.
// interrupt_signal: the signal caught while a SignalGuard lives, 0 when none.
int interrupt_signal();

class Interrupted : public RuntimeError {
 public:
  Interrupted(const std::string& what, int sig) : RuntimeError(what), sig_(sig) {}
  int exit_code() const noexcept override { return 128 + sig_; }
  int signal() const noexcept { return sig_; }

 private:
  int sig_;
};

// SignalGuard: a handler recording SIGINT and SIGTERM while it lives (not restarting poll), the
// previous dispositions after.
class SignalGuard {
 public:
  SignalGuard();
  ~SignalGuard();
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

 private:
  static constexpr int kSignals[2] = {SIGINT, SIGTERM};
  struct sigaction old_[2]{};
};

}  // namespace gradsync::sweep
