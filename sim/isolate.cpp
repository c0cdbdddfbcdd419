// isolate.cpp: one simulation per child process, its result back through a pipe.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "core/json_text.hpp"
#include "sim/simulate.hpp"

namespace gradsync::sim {
namespace {

using json = nlohmann::ordered_json;

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    done += static_cast<std::size_t>(w);
  }
}

}  // namespace

// The reply: 'R' and the body's bytes, or 'E' and the error as JSON {kind, message}.
ChildProcess::ChildProcess(const std::function<std::string()>& body, std::string what) : what_(std::move(what)) {
  int fds[2];
  if (::pipe(fds) != 0) throw RuntimeError(fmt::format("sim: pipe: {}", std::strerror(errno)));
  // What this process has buffered for stdout goes out now: a child inherits the buffer, and any
  // flush in it (a library's print) would write the parent's pending lines a second time.
  std::cout.flush();
  std::fflush(nullptr);
  pid_ = ::fork();
  if (pid_ < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw RuntimeError(fmt::format("sim: fork: {}", std::strerror(errno)));
  }
  if (pid_ == 0) {
    ::close(fds[0]);
    std::string reply;
    const auto error = [&](const char* kind, const std::exception& e) {
      // Text that is not UTF-8 is replaced rather than ending the child.
      reply.assign(1, 'E');
      reply += json_text(json{{"kind", kind}, {"message", e.what()}});
    };
    // A child whose parent is killed goes too (a mirrored simulation under a killed sweep point).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    try {
      const std::string result = body();
      reply.reserve(result.size() + 1);
      reply.assign(1, 'R');
      reply += result;
    } catch (const UsageError& e) {
      error("usage", e);
    } catch (const DataError& e) {
      error("data", e);
    } catch (const ConfigError& e) {
      error("config", e);
    } catch (const MirrorBroken& e) {
      error("mirror", e);
    } catch (const std::exception& e) {
      error("runtime", e);
    }
    write_all(fds[1], reply);
    ::close(fds[1]);
    ::_exit(0);
  }
  ::close(fds[1]);
  fd_ = fds[0];
}

ChildProcess::~ChildProcess() {
  if (fd_ >= 0) ::close(fd_);
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

bool ChildProcess::read_some() {
  if (fd_ < 0) return true;
  char buf[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd_, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got > 0) {
      text_.append(buf, static_cast<std::size_t>(got));
      return false;
    }
    ::close(fd_);
    fd_ = -1;
    return true;
  }
}

std::string ChildProcess::finish() {
  while (!read_some()) {
  }
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text_.empty()) {
    throw RuntimeError(fmt::format("sim: {} process died ({})", what_,
                                   WIFSIGNALED(status) ? fmt::format("signal {}", WTERMSIG(status))
                                                       : fmt::format("exit {}", WEXITSTATUS(status))));
  }
  if (text_[0] == 'E') {
    const json error = json::parse(std::string_view(text_).substr(1));
    const std::string kind = error["kind"].get<std::string>();
    const std::string msg = error["message"].get<std::string>();
    if (kind == "usage") throw UsageError(msg);
    if (kind == "data") throw DataError(msg);
    if (kind == "config") throw ConfigError(msg);
    if (kind == "mirror") throw MirrorBroken(msg);
    throw RuntimeError(msg);
  }
  return text_.substr(1);
}

IsolatedSimulation::IsolatedSimulation(const Scenario& s, Strategy strategy, bool full, const TraceOptions* keep)
    : s_(s),
      strategy_(strategy),
      full_(full),
      keep_(keep ? std::optional<TraceOptions>(*keep) : std::nullopt),
      child_(body(true), what()) {}

std::string IsolatedSimulation::what() const { return fmt::format("the {} simulation", strategy_label(strategy_)); }

std::function<std::string()> IsolatedSimulation::body(bool mirror) const {
  return [s = s_, strategy = strategy_, full = full_, keep = keep_, mirror] {
    return simulate_record(s, strategy, keep && full ? &*keep : nullptr, full, mirror);
  };
}

StrategyResult IsolatedSimulation::finish() {
  try {
    return result_from_bytes(child_.finish());
  } catch (const MirrorBroken&) {
    ChildProcess every(body(false), what());
    return result_from_bytes(every.finish());
  }
}

StrategyResult simulate_isolated(const Scenario& s, Strategy strategy, const TraceOptions* keep) {
  IsolatedSimulation child(s, strategy, true, keep);
  return child.finish();
}

}  // namespace gradsync::sim
