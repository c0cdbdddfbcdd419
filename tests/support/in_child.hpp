// in_child.hpp: runs a simulation in a forked child process. SimGrid allows one engine per
// process, so a test that simulates twice (a baseline and a change) simulates one of them here.
//
//   const std::vector<double> t = in_child([&] { return std::vector<double>{simulate(...).time_s}; });
//
// The child's doubles come back through a pipe; an exception in the child is printed and fails the
// test (the returned vector is then empty or short, which the caller's size check also catches).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

namespace gradsync::testing_support {

template <class F>
std::vector<double> in_child(F fn) {
  int fds[2];
  if (::pipe(fds) != 0) std::abort();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    int status = 0;
    try {
      const std::vector<double> out = fn();
      const auto n = static_cast<ssize_t>(out.size() * sizeof(double));
      if (::write(fds[1], out.data(), static_cast<std::size_t>(n)) != n) status = 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      status = 1;
    }
    ::_exit(status);
  }
  ::close(fds[1]);
  std::vector<double> out;
  double v = 0;
  while (::read(fds[0], &v, sizeof v) == static_cast<ssize_t>(sizeof v)) out.push_back(v);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return out;
}

}  // namespace gradsync::testing_support
