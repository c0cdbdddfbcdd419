// engine.hpp: what the CPU and GPU engines share: a clock, the trace recorder, work that
// completes later, a host (threads, the GIL, iteration events) and the collective watchdog.
// Internal to real/.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/backend.hpp"
#include "core/trace.hpp"

namespace gradsync::real {

// now_s: seconds on the steady clock (CLOCK_MONOTONIC: the same for every process of a machine).
inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Recorder: the events of one process, from any thread; times relative to `epoch`.
class Recorder {
 public:
  void set_epoch(double t) { epoch_ = t; }
  double epoch() const { return epoch_; }
  void add(TraceEvent e) {
    e.start_s -= epoch_;
    e.end_s -= epoch_;
    const std::lock_guard<std::mutex> lock(mutex_);
    trace_.add(std::move(e));
  }
  Trace take() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return std::move(trace_);
  }

 private:
  std::mutex mutex_;
  Trace trace_;
  double epoch_ = 0;
};

// device_event: an event of device `rank` on stream `s` (device work on the host stream goes to
// the compute track), tagged with the iteration its host is issuing (0 before the first).
inline TraceEvent device_event(int rank, const std::atomic<int>* iteration, Stream s, const std::string& name,
                               Bytes bytes, int bucket, int peer) {
  TraceEvent e;
  e.rank = rank;
  e.stream = s == Stream::kHost ? Stream::kCompute : s;
  e.name = name;
  e.bytes = bytes;
  e.bucket = bucket;
  e.peer = peer;
  e.iteration = iteration ? iteration->load() : 0;
  return e;
}

// RealWork: every Work of the real engines, so that stream_wait can keep what it was given.
class RealWork : public Work, public std::enable_shared_from_this<RealWork> {};
inline WorkPtr share(Work& w) { return static_cast<RealWork&>(w).shared_from_this(); }

// Flag: work that a worker thread completes (or fails).
class Flag final : public RealWork {
 public:
  void set(std::exception_ptr error = nullptr) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
      error_ = std::move(error);
    }
    cv_.notify_all();
  }
  void wait() override {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return done_; });
    if (error_) std::rethrow_exception(error_);
  }
  bool done() const override {
    const std::lock_guard<std::mutex> lock(mutex_);
    return done_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

// AllWork: done when every part is (a single-process group's collective).
class AllWork final : public RealWork {
 public:
  explicit AllWork(std::vector<WorkPtr> parts) : parts_(std::move(parts)) {}
  void wait() override {
    for (auto& p : parts_) p->wait();
  }
  bool done() const override {
    for (const auto& p : parts_)
      if (!p->done()) return false;
    return true;
  }

 private:
  std::vector<WorkPtr> parts_;
};

// StreamWorker: one stream of a CPU device: a thread running tasks in order. A task first waits
// for its dependencies, then runs, then (when it has a name) records its event.
class StreamWorker {
 public:
  struct Task {
    std::vector<WorkPtr> deps;
    std::function<void()> body;
    TraceEvent event;  // recorded when event.name is not empty
  };
  explicit StreamWorker(Recorder& rec);
  ~StreamWorker();
  StreamWorker(const StreamWorker&) = delete;
  StreamWorker& operator=(const StreamWorker&) = delete;

  // push enqueues a task; the work completes when it has run.
  WorkPtr push(Task t);
  // last: the work of the last task pushed (null before the first).
  WorkPtr last();
  // running: whether a task's body is running now (not waiting for its dependencies).
  bool running() const { return running_.load(std::memory_order_relaxed); }

 private:
  void loop();
  Recorder& rec_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::pair<Task, std::shared_ptr<Flag>>> queue_;
  std::size_t head_ = 0;
  WorkPtr last_;
  bool stop_ = false;
  std::atomic<bool> running_{false};
  std::thread thread_;
};

// Watchdog: collectives in flight and their start; a thread checks every 100 ms (as c10d's) and
// calls `on_timeout` with a description of the oldest one past the timeout. on_timeout must not
// return (it aborts the communicator and the process).
class Watchdog {
 public:
  using Abort = std::function<void(const std::string& what)>;
  Watchdog(double timeout_s, Abort on_timeout);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // begin / end bracket one collective of `rank`; begin returns its ticket.
  std::uint64_t begin(int rank, Collective c, const std::string& name, int bucket);
  void end(std::uint64_t ticket);
  double timeout_s() const { return timeout_s_; }

 private:
  struct Entry {
    int rank;
    Collective c;
    std::string name;
    int bucket;
    double start;
  };
  void loop();
  double timeout_s_;
  Abort abort_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::uint64_t, Entry> live_;
  std::uint64_t next_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

// RealHost: a process's host thread(s): host ops spin for their time (under the GIL when they
// hold it), parallel() runs real threads, iterations are recorded for every device it drives.
class RealHost final : public Host {
 public:
  RealHost(Recorder& rec, std::vector<int> devices) : rec_(rec), devices_(std::move(devices)) {}
  void run(const HostOp& op) override;
  void parallel(int n, const std::function<void(int)>& fn) override;
  void begin_iteration(int iteration) override;
  void end_iteration(int iteration) override;
  // iteration: the step being issued now (events are tagged with it), 0 before the first.
  const std::atomic<int>& iteration() const { return iteration_; }

 private:
  Recorder& rec_;
  std::vector<int> devices_;
  std::mutex gil_;
  std::atomic<int> iteration_{0};
  double start_ = 0;
};

}  // namespace gradsync::real
