// engine.cpp: stream workers, the watchdog and the host shared by the CPU and GPU engines.
#include "real/engine.hpp"

#include <fmt/format.h>

#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>

#include "core/error.hpp"

namespace gradsync::real {

StreamWorker::StreamWorker(Recorder& rec) : rec_(rec), thread_([this] { loop(); }) {}

StreamWorker::~StreamWorker() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

WorkPtr StreamWorker::push(Task t) {
  auto flag = std::make_shared<Flag>();
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    queue_.emplace_back(std::move(t), flag);
    last_ = flag;
  }
  cv_.notify_all();
  return flag;
}

WorkPtr StreamWorker::last() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return last_;
}

void StreamWorker::loop() {
  for (;;) {
    std::pair<Task, std::shared_ptr<Flag>> item;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || head_ < queue_.size(); });
      if (head_ >= queue_.size()) return;  // stopping and drained
      item = std::move(queue_[head_++]);
      if (head_ == queue_.size()) {
        queue_.clear();
        head_ = 0;
      }
    }
    auto& [task, flag] = item;
    std::exception_ptr error;
    try {
      for (auto& d : task.deps) d->wait();
      const double start = now_s();
      running_.store(true, std::memory_order_relaxed);
      struct Idle {
        std::atomic<bool>& flag;
        ~Idle() { flag.store(false, std::memory_order_relaxed); }
      } idle{running_};
      if (task.body) task.body();
      if (!task.event.name.empty()) {
        task.event.start_s = start;
        task.event.end_s = now_s();
        rec_.add(std::move(task.event));
      }
    } catch (...) {
      error = std::current_exception();
    }
    flag->set(error);
  }
}

Watchdog::Watchdog(double timeout_s, Abort on_timeout)
    : timeout_s_(timeout_s), abort_(std::move(on_timeout)), thread_([this] { loop(); }) {}

Watchdog::~Watchdog() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::uint64_t Watchdog::begin(int rank, Collective c, const std::string& name, int bucket) {
  const std::lock_guard<std::mutex> lock(mutex_);
  live_[next_] = Entry{rank, c, name, bucket, now_s()};
  return next_++;
}

void Watchdog::end(std::uint64_t ticket) {
  const std::lock_guard<std::mutex> lock(mutex_);
  live_.erase(ticket);
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    const double now = now_s();
    for (const auto& [ticket, e] : live_) {
      if (now - e.start <= timeout_s_) continue;
      const std::string what = fmt::format(
          "rank {}: {} \"{}\"{} did not complete within --timeout {} s (a peer never arrived, or left); "
          "aborting the communicator",
          e.rank, collective_name(e.c), e.name, e.bucket >= 0 ? fmt::format(" (bucket {})", e.bucket) : "", timeout_s_);
      lock.unlock();
      abort_(what);
      return;  // not reached: abort_ ends the process
    }
  }
}

void RealHost::run(const HostOp& op) {
  // Framework overhead the cost model names (Python, module copies) is spent as CPU time, so
  // that DataParallel's replica threads contend for the GIL as they do in PyTorch.
  std::unique_lock<std::mutex> lock(gil_, std::defer_lock);
  if (op.gil) lock.lock();
  const double until = now_s() + op.time_s;
  while (now_s() < until) {
  }
}

void RealHost::parallel(int n, const std::function<void(int)>& fn) {
  // Every thread is started before any runs `fn`: ranks wait for each other in collectives, so a
  // thread the system refuses (too many for its limits) must stop the others before they wait.
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  std::mutex m;
  std::condition_variable cv;
  enum class Go { kWait, kRun, kAbort } go = Go::kWait;
  const auto set_go = [&](Go g) {
    {
      const std::lock_guard<std::mutex> lock(m);
      go = g;
    }
    cv.notify_all();
  };
  try {
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        {
          std::unique_lock<std::mutex> lock(m);
          cv.wait(lock, [&] { return go != Go::kWait; });
          if (go == Go::kAbort) return;
        }
        try {
          fn(i);
        } catch (...) {
          errors[static_cast<std::size_t>(i)] = std::current_exception();
        }
      });
    }
  } catch (const std::system_error& e) {
    set_go(Go::kAbort);
    for (auto& t : threads) t.join();
    throw RuntimeError(fmt::format("cannot start {} rank threads in one process: the system refused thread {} ({}); "
                                   "use fewer (--world-size) or one process per rank (--launch mpi)",
                                   n, threads.size() + 1, e.what()));
  }
  set_go(Go::kRun);
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

void RealHost::begin_iteration(int iteration) {
  iteration_ = iteration;
  start_ = now_s();
}

void RealHost::end_iteration(int iteration) {
  const double end = now_s();
  for (int d : devices_) {
    TraceEvent e;
    e.rank = d;
    e.stream = Stream::kHost;
    e.name = iteration_event(iteration);
    e.start_s = start_;
    e.end_s = end;
    e.iteration = iteration;
    rec_.add(e);
  }
}

}  // namespace gradsync::real
