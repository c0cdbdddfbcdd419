// cpu_backend.cpp: the CPU engine: a rank's CPU as a device with worker-thread streams, OpenBLAS
// GEMMs and memory streaming for compute, MPI non-blocking collectives across processes and
// shared-memory collectives between the ranks that are threads of one process.
#include <mpi.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>

#include "core/error.hpp"
#include "core/output_folder.hpp"
#include "core/units.hpp"
#include "real/cpu_device.hpp"
#include "real/mpi.hpp"
#include "real/rig.hpp"

extern "C" void openblas_set_num_threads(int);
extern "C" char* openblas_get_config(void);

namespace gradsync::real {
namespace {

using namespace cpu_detail;

// CallBuffers: a call's input and output on a rank (the same buffer in place).
struct CallBuffers {
  char* in = nullptr;
  char* out = nullptr;
};

// call_buffers: the buffers a call of `c` on `op` uses over `n` ranks, the same for MPI's ranks
// and the threads' (a reduce-scatter's input of n blocks of `floats / n` floats, at least its
// bytes; its output one block and the thread split's remainder). Called once on the calling
// thread before the call is queued, so that they are grown (and zero-filled) there and the timed
// call is the collective, not the first touch of a new bucket's memory (a rebuilt 28 MB bucket
// took 14 ms in its first call; PyTorch allocates a bucket when it builds it, not inside its
// allreduce), and again by the call, which then finds them.
CallBuffers call_buffers(CpuDevice& d, Collective c, const CollectiveOp& op, int n) {
  const std::size_t bytes = padded(op.bytes);
  const std::size_t ranks = static_cast<std::size_t>(std::max(1, n));
  CallBuffers b;
  if (c == Collective::kReduceScatter) {
    const std::size_t block = std::max<std::size_t>(1, bytes / 4 / ranks) * 4;
    b.in = d.buffer(op.name, std::max(bytes, block * ranks));
    b.out = d.buffer(op.name + "#out", block + 4);
    return b;
  }
  b.in = d.buffer(op.name, bytes);
  b.out = c == Collective::kAllgather ? d.buffer(op.name + "#out", bytes * ranks) : b.in;
  return b;
}

// One rank's view of MPI_COMM_WORLD.
class MpiGroup final : public CollectiveCalls {
 public:
  MpiGroup(Rig& rig, CpuDevice& d, int rank, int size, Watchdog& wd, std::string host, bool crowded)
      : rig_(rig), dev_(d), rank_(rank), size_(size), wd_(wd), host_(std::move(host)), crowded_(crowded) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  WorkPtr call(Collective c, const CollectiveOp& op, int root) override {
    rig_.note(op.name, c);
    (void)call_buffers(dev_, c, op, size_);  // grown here, as DDP's buckets are allocated before their calls
    StreamWorker::Task t = comm_task(dev_, op);
    t.body = [this, c, op, root] { run(c, op, root); };
    return dev_.stream(Stream::kComm).push(std::move(t));
  }

 private:
  void check(int rc, const char* call, const CollectiveOp& op) const {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING] = {};
    int len = 0;
    MPI_Error_string(rc, text, &len);
    throw RuntimeError(fmt::format("host {}, rank {}: {} (\"{}\", {} bytes) failed at {}:{}: {}", host_, rank_, call,
                                   op.name, op.bytes, __FILE__, __LINE__, std::string(text, std::size_t(len))));
  }
  void run(Collective c, const CollectiveOp& op, int root) {
    const std::size_t bytes = padded(op.bytes);
    const int floats = static_cast<int>(bytes / 4);
    MPI_Request req = MPI_REQUEST_NULL;
    const std::uint64_t ticket = wd_.begin(rank_, c, op.name, op.bucket);
    const CallBuffers b = call_buffers(dev_, c, op, size_);
    switch (c) {
      case Collective::kAllreduce:
        check(MPI_Iallreduce(MPI_IN_PLACE, b.in, floats, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req), "MPI_Iallreduce",
              op);
        break;
      case Collective::kBroadcast:
        check(MPI_Ibcast(b.in, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD, &req), "MPI_Ibcast", op);
        break;
      case Collective::kReduce:
        check(MPI_Ireduce(rank_ == root ? MPI_IN_PLACE : b.in, b.in, floats, MPI_FLOAT, MPI_SUM, root, MPI_COMM_WORLD,
                          &req),
              "MPI_Ireduce", op);
        break;
      case Collective::kAllgather:
        check(MPI_Iallgather(b.in, static_cast<int>(bytes), MPI_BYTE, b.out, static_cast<int>(bytes), MPI_BYTE,
                             MPI_COMM_WORLD, &req),
              "MPI_Iallgather", op);
        break;
      case Collective::kReduceScatter: {
        const int block = std::max(1, floats / size_);
        check(MPI_Ireduce_scatter_block(b.in, b.out, block, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req),
              "MPI_Ireduce_scatter_block", op);
        break;
      }
    }
    // Progress it: a non-blocking collective moves only inside MPI calls (Open MPI's reduce one
    // pipelined segment per call), so the comm thread polls without pause, yielding its core to
    // any thread waiting for one. Only when this host's ranks outnumber half its cores (a comm
    // and a compute thread each) and the rank's compute or copy stream is running does it back
    // off to short sleeps, so as not to take the core its compute needs: a 2 MiB reduce between
    // two ranks took 35 ms with sleeps, against 1.1 ms for the allreduce.
    int done = 0;
    for (int spin = 0; !done; spin = std::min(spin + 1, 1 << 20)) {  // polls counted up to a bound
      check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test", op);
      if (done) break;
      if (spin > 64 && crowded_ && dev_.computing())
        std::this_thread::sleep_for(std::chrono::microseconds(spin > 1000 ? 200 : 20));
      else
        std::this_thread::yield();
    }
    wd_.end(ticket);
  }

  Rig& rig_;
  CpuDevice& dev_;
  int rank_, size_;
  Watchdog& wd_;
  std::string host_;
  bool crowded_;  // this host's ranks have fewer than two cores each
};

// ThreadComm: collectives among devices that are threads of this process. Each member's comm
// thread brings its buffer; when all are there, each reduces its slice of the data across every
// member's buffer (or copies from the root), and none leaves before all are done.
class ThreadComm {
 public:
  ThreadComm(Rig& rig, std::vector<CpuDevice*> devs, Watchdog& wd)
      : rig_(rig), devs_(std::move(devs)), wd_(wd), next_(devs_.size(), 0) {}
  int size() const { return static_cast<int>(devs_.size()); }
  CpuDevice& dev(int m) { return *devs_[static_cast<std::size_t>(m)]; }

  // enqueue member m's part of a call on its comm stream.
  WorkPtr enqueue(int m, Collective c, const CollectiveOp& op, int root) {
    rig_.note(op.name, c);
    std::uint64_t seq = 0;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      seq = next_[static_cast<std::size_t>(m)]++;
    }
    CpuDevice& d = dev(m);
    (void)call_buffers(d, c, op, size());  // grown here, as DDP's buckets are allocated before their calls
    StreamWorker::Task t = comm_task(d, op);
    t.body = [this, m, seq, c, op, root] { run(m, seq, c, op, root); };
    return d.stream(Stream::kComm).push(std::move(t));
  }

 private:
  struct Slot {
    Collective c = Collective::kAllreduce;
    Bytes bytes = 0;
    int root = -1;
    std::string name;
    std::vector<char*> in, out;
    int arrived = 0, finished = 0, left = 0;
  };

  void run(int m, std::uint64_t seq, Collective c, const CollectiveOp& op, int root) {
    const int n = size();
    const std::uint64_t ticket = wd_.begin(m, c, op.name, op.bucket);
    const std::size_t bytes = padded(op.bytes);
    CpuDevice& d = dev(m);
    const CallBuffers b = call_buffers(d, c, op, n);
    char* in = b.in;
    char* out = b.out;
    std::unique_lock<std::mutex> lock(mutex_);
    Slot& s = slots_[seq];
    if (s.arrived == 0) {
      s.c = c;
      s.bytes = op.bytes;
      s.root = root;
      s.name = op.name;
      s.in.assign(static_cast<std::size_t>(n), nullptr);
      s.out.assign(static_cast<std::size_t>(n), nullptr);
    } else if (s.c != c || s.bytes != op.bytes || s.root != root) {
      throw RuntimeError(fmt::format(
          "real: collective #{} differs across ranks: rank {} calls {} \"{}\" of {} bytes, another {} \"{}\" of {} "
          "bytes; every rank must issue the same collectives in the same order",
          seq, m, collective_name(c), op.name, op.bytes, collective_name(s.c), s.name, s.bytes));
    }
    s.in[static_cast<std::size_t>(m)] = in;
    s.out[static_cast<std::size_t>(m)] = out;
    ++s.arrived;
    cv_.notify_all();
    cv_.wait(lock, [&] { return s.arrived == n; });
    lock.unlock();
    part(s, m, n, bytes);
    lock.lock();
    ++s.finished;
    cv_.notify_all();
    cv_.wait(lock, [&] { return s.finished == n; });
    if (++s.left == n) slots_.erase(seq);
    lock.unlock();
    wd_.end(ticket);
  }

  static void part(const Slot& s, int m, int n, std::size_t bytes) {
    // One member: as NCCL with one rank, an in-place call (allreduce, reduce, broadcast) has
    // nothing to combine or send, and an out-of-place one copies its buffer (enqueue.cc).
    if (n == 1) {
      if (s.c == Collective::kAllgather) std::memcpy(s.out[0], s.in[0], bytes);
      if (s.c == Collective::kReduceScatter) std::memcpy(s.out[0], s.in[0], bytes);
      return;
    }
    const std::size_t floats = bytes / 4;
    const auto slice = [&](std::size_t total, int who) {
      return std::pair<std::size_t, std::size_t>{
          total * static_cast<std::size_t>(who) / static_cast<std::size_t>(n),
          total * static_cast<std::size_t>(who + 1) / static_cast<std::size_t>(n)};
    };
    const auto f = [](char* p) { return reinterpret_cast<float*>(p); };
    switch (s.c) {
      case Collective::kAllreduce:
      case Collective::kReduce: {
        const auto [lo, hi] = slice(floats, m);
        for (std::size_t i = lo; i < hi; ++i) {
          float sum = 0;
          for (int j = 0; j < n; ++j) sum += f(s.in[static_cast<std::size_t>(j)])[i];
          if (s.c == Collective::kReduce) {
            f(s.in[static_cast<std::size_t>(s.root)])[i] = sum;
          } else {
            for (int j = 0; j < n; ++j) f(s.in[static_cast<std::size_t>(j)])[i] = sum;
          }
        }
        break;
      }
      case Collective::kBroadcast:
        if (m != s.root) std::memcpy(s.in[static_cast<std::size_t>(m)], s.in[static_cast<std::size_t>(s.root)], bytes);
        break;
      case Collective::kAllgather:
        for (int j = 0; j < n; ++j)
          std::memcpy(s.out[static_cast<std::size_t>(j)] + bytes * static_cast<std::size_t>(m),
                      s.in[static_cast<std::size_t>(m)], bytes);
        break;
      case Collective::kReduceScatter: {
        const auto [lo, hi] = slice(floats, m);
        for (std::size_t i = lo; i < hi; ++i) {
          float sum = 0;
          for (int j = 0; j < n; ++j) sum += f(s.in[static_cast<std::size_t>(j)])[i];
          f(s.out[static_cast<std::size_t>(m)])[i - lo] = sum;
        }
        break;
      }
    }
  }

  Rig& rig_;
  std::vector<CpuDevice*> devs_;
  Watchdog& wd_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::uint64_t> next_;
  std::map<std::uint64_t, Slot> slots_;
};

// A DDP rank's view of the thread world.
class ThreadRankGroup final : public CollectiveCalls {
 public:
  ThreadRankGroup(ThreadComm& comm, int m) : comm_(comm), m_(m) {}
  int rank() const override { return m_; }
  int size() const override { return comm_.size(); }
  WorkPtr call(Collective c, const CollectiveOp& op, int root) override { return comm_.enqueue(m_, c, op, root); }

 private:
  ThreadComm& comm_;
  int m_;
};

// DataParallel's single-process group: one call runs on every member.
class ThreadLocalGroup final : public CollectiveCalls {
 public:
  explicit ThreadLocalGroup(ThreadComm& comm) : comm_(comm) {}
  int rank() const override { return 0; }
  int size() const override { return comm_.size(); }
  WorkPtr call(Collective c, const CollectiveOp& op, int root) override {
    std::vector<WorkPtr> parts;
    for (int m = 0; m < comm_.size(); ++m) parts.push_back(comm_.enqueue(m, c, op, root));
    return std::make_shared<AllWork>(std::move(parts));
  }

 private:
  ThreadComm& comm_;
};

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(colon + 1);
        name.erase(0, name.find_first_not_of(' '));
        return name;
      }
    }
  }
  return "CPU";
}

double memory_total() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  while (in >> key >> kib) {
    if (key == "MemTotal:") return kib * 1024.0;
    in.ignore(1 << 10, '\n');
  }
  return 0;
}

// check_host_memory: this process's ranks hold at least their parameters and twice their
// gradients (the gradients and DDP's buckets) before any activation or workspace; a world that
// cannot hold that in the host's available memory is refused before it starts, not killed by the
// kernel's OOM killer partway (Linux overcommits: the allocations themselves succeed).
void check_host_memory(const RigOptions& o) {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  double available = -1;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") {
      available = kib * 1024;
      break;
    }
  }
  if (available < 0) return;  // no /proc: nothing to check against
  const double per_rank = static_cast<double>(o.parameter_bytes) + 2.0 * static_cast<double>(o.gradient_bytes);
  const double need = per_rank * o.local;
  if (need > available) {
    throw RuntimeError(fmt::format(
        "host {}: {} CPU rank{} in this process need{} at least {} (each {}: {}), and the host has {} available; {}",
        o.host_name, o.local, o.local == 1 ? "" : "s", o.local == 1 ? "s" : "", human_bytes(need),
        human_bytes(per_rank), o.holds, human_bytes(available),
        o.local == 1 ? "the model does not fit this host's memory"
                     : "use fewer (--world-size) or one process per host (--launch mpi)"));
  }
}

class CpuRig final : public Rig {
 public:
  explicit CpuRig(const RigOptions& o) : o_(o) {
    // One BLAS thread per device stream: ranks (processes or threads) already fill the cores.
    openblas_set_num_threads(1);
    watchdog_ = std::make_unique<Watchdog>(o.timeout_s, [launch = o.launch, host = o.host_name](const std::string& w) {
      std::fprintf(stderr, "error: host %s, %s\n", host.c_str(), w.c_str());
      std::fflush(stderr);
      discard_staging_folders();  // the process ends without unwinding: --out as it was
      if (launch == Launch::kMpi) mpi::abort(1);
      std::_Exit(1);
    });
    check_host_memory(o);
    for (int i = 0; i < o.local; ++i) {
      devs_.push_back(std::make_unique<CpuDevice>(o.first_rank + i, rec_, o.parameter_bytes, o.gradient_bytes));
    }
    std::vector<CpuDevice*> raw;
    for (auto& d : devs_) raw.push_back(d.get());
    if (o.launch == Launch::kMpi) {
      if (o.local != 1) throw RuntimeError("real: under MPI each process drives one device");
      const int local_ranks = mpi::ranks_on_this_host();
      const bool crowded = static_cast<long>(std::thread::hardware_concurrency()) < 2L * local_ranks;
      rank_groups_.push_back(
          std::make_unique<MpiGroup>(*this, *devs_[0], o.first_rank, o.world, *watchdog_, o.host_name, crowded));
      link_ = mpi::all_ranks_on_one_host() ? "shm" : "net";
    } else if (o.launch == Launch::kFile) {
      throw UsageError(
          "--init-method file://: the CPU backend's ranks reach each other through MPI; start them with mpirun/srun, "
          "or run them as threads with --launch local --world-size N");
    } else {
      link_ = o.local > 1 ? "shm" : "local";
    }
    if (o.launch != Launch::kMpi) {
      comm_ = std::make_unique<ThreadComm>(*this, raw, *watchdog_);
      for (int i = 0; i < o.local; ++i) rank_groups_.push_back(std::make_unique<ThreadRankGroup>(*comm_, i));
    }
  }
  ~CpuRig() override {
    for (auto& d : devs_) d->synchronize();
  }
  Device& device(int local) override { return *devs_.at(static_cast<std::size_t>(local)); }
  ProcessGroup& rank_group(int local) override { return *rank_groups_.at(static_cast<std::size_t>(local)); }
  ProcessGroup& local_group(int m) override {
    if (m < 1 || m > o_.local) throw RuntimeError(fmt::format("real: a local group of {} of {} devices", m, o_.local));
    auto& [comm, group] = locals_[m];
    if (!group) {
      std::vector<CpuDevice*> raw;
      for (int i = 0; i < m; ++i) raw.push_back(devs_[static_cast<std::size_t>(i)].get());
      comm = std::make_unique<ThreadComm>(*this, raw, *watchdog_);
      group = std::make_unique<ThreadLocalGroup>(*comm);
    }
    return *group;
  }
  void attach(int local, const std::atomic<int>* it) override { devs_.at(static_cast<std::size_t>(local))->attach(it); }
  double peak_bytes(int local) const override { return devs_.at(static_cast<std::size_t>(local))->peak(); }
  double capacity_bytes() const override {
    return memory_total() / std::max(1, o_.launch == Launch::kMpi ? 1 : o_.local);
  }
  std::string device_name() const override { return cpu_name(); }
  std::string library() const override {
    std::string blas = openblas_get_config();
    if (const auto sp = blas.find(' ', 9); sp != std::string::npos) blas.resize(sp);  // "OpenBLAS 0.3.21"
    return fmt::format("{}, {}", mpi::initialized() ? mpi::version() : std::string("threads"), blas);
  }
  std::string link_class() const override { return link_; }

 private:
  RigOptions o_;
  std::string link_;
  std::unique_ptr<Watchdog> watchdog_;
  std::vector<std::unique_ptr<CpuDevice>> devs_;
  std::unique_ptr<ThreadComm> comm_;
  std::vector<std::unique_ptr<ProcessGroup>> rank_groups_;
  std::map<int, std::pair<std::unique_ptr<ThreadComm>, std::unique_ptr<ProcessGroup>>> locals_;
};

}  // namespace

std::unique_ptr<Rig> make_cpu_rig(const RigOptions& o) { return std::make_unique<CpuRig>(o); }

}  // namespace gradsync::real
