// gpu_backend_cuda.cpp: the GPU engine (CUDA + cuBLAS + NCCL). A device is one GPU with a
// compute, an NCCL and a copy stream; every op is timed with CUDA events that are turned into
// host-clock times when the device synchronizes (gpu_device.cpp). Collectives are NCCL's: one communicator per
// rank (MPI or the file at --init-method carries the unique id), or ncclCommInitAll for the GPUs
// of one process (--launch local, DataParallel). Every CUDA/NCCL/cuBLAS call is checked; an
// error names the host, the rank, the call, file:line and the library's text.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/output_folder.hpp"
#include "real/gpu_backend.hpp"
#include "real/gpu_device.hpp"
#include "real/mpi.hpp"
#include "real/rig.hpp"

namespace gradsync::real {

namespace {

std::string versions() {
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  int nccl = 0;
  ncclGetVersion(&nccl);
  // NCCL encodes 2.27.3 as 22703 (major*10000 + minor*100 + patch) since 2.9.
  return fmt::format("CUDA runtime {}.{}, NCCL {}.{}.{}", runtime / 1000, runtime % 1000 / 10, nccl / 10000,
                     nccl % 10000 / 100, nccl % 100);
}

}  // namespace

GpuBackendInfo gpu_backend_info() {
  GpuBackendInfo info;
  info.compiled = true;
  const std::string v = versions();
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    info.summary = fmt::format("GPU backend: built ({}); no GPU visible: cudaGetDeviceCount: {}: {}", v,
                               cudaGetErrorName(err), cudaGetErrorString(err));
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return info;
  }
  info.visible_gpus = count;
  info.summary = fmt::format("GPU backend: built ({}); {} GPU(s) visible", v, count);
  if (count > 0) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) info.summary += std::string(", GPU0 ") + prop.name;
  }
  return info;
}

GpuProps gpu_props(int device) {
  cudaDeviceProp prop{};
  const cudaError_t err = cudaGetDeviceProperties(&prop, device);
  if (err != cudaSuccess) {
    throw RuntimeError(
        fmt::format("cudaGetDeviceProperties({}): {}: {}", device, cudaGetErrorName(err), cudaGetErrorString(err)));
  }
  return {prop.name, prop.major * 10 + prop.minor, static_cast<double>(prop.totalGlobalMem)};
}

namespace {

using gpu_detail::CudaWork;
using gpu_detail::GpuDevice;
using gpu_detail::Site;

class GpuRig;

// NcclCalls: member `m`'s part of a collective on its comm stream, after its compute stream.
std::shared_ptr<CudaWork> enqueue_nccl(GpuDevice& d, ncclComm_t comm, int nranks, Collective c, const CollectiveOp& op,
                                       int root);

class GpuRig final : public Rig {
 public:
  explicit GpuRig(const RigOptions& o) : o_(o), site_{o.host_name, o.first_rank} {
    watchdog_ = std::make_unique<Watchdog>(o.timeout_s, [this](const std::string& w) { abort_all(w); });
    for (int i = 0; i < o.local; ++i)
      devs_.push_back(std::make_unique<GpuDevice>(o.first_rank + i, o.gpu_offset + i, rec_, o));
    // Peer access where the GPUs allow it (DataParallel's scatter and gather are peer copies).
    for (int i = 0; i < o.local; ++i)
      for (int j = 0; j < o.local; ++j) {
        int can = 0;
        if (i == j) continue;
        cudaDeviceCanAccessPeer(&can, devs_[i]->cuda(), devs_[j]->cuda());
        if (can) {
          cudaSetDevice(devs_[i]->cuda());
          const cudaError_t e = cudaDeviceEnablePeerAccess(devs_[j]->cuda(), 0);
          if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CUDA(e);
          cudaGetLastError();
          p2p_ = true;
        }
      }
    if (o.launch == Launch::kLocal) {
      world_comms_ = init_all(o.local);
      link_ = o.local == 1 ? "local" : p2p_ ? "p2p" : "pcie-host";
    } else {
      ncclUniqueId id{};
      if (o.first_rank == 0) NCCL(ncclGetUniqueId(&id));
      std::string text(reinterpret_cast<const char*>(&id), sizeof id);
      if (o.launch == Launch::kMpi) {
        text = mpi::broadcast(text);
        link_ = mpi::all_ranks_on_one_host() ? "intra-node" : "net";
      } else {
        text = exchange_through_file(text);
        link_ = "nccl";
      }
      std::memcpy(&id, text.data(), sizeof id);
      CUDA(cudaSetDevice(devs_[0]->cuda()));
      ncclComm_t comm = nullptr;
      NCCL(ncclCommInitRank(&comm, o.world, id, o.first_rank));
      world_comms_ = {comm};
    }
    poller_ = std::thread([this] { poll(); });
  }
  ~GpuRig() override {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    poller_.join();
    for (auto& d : devs_) d->synchronize();
    for (ncclComm_t c : world_comms_) ncclCommDestroy(c);
    for (auto& [m, comms] : local_comms_)
      for (ncclComm_t c : comms) ncclCommDestroy(c);
    if (o_.launch == Launch::kFile && o_.first_rank == 0) std::filesystem::remove(o_.init_file);
  }
  Device& device(int local) override { return *devs_.at(static_cast<std::size_t>(local)); }
  ProcessGroup& rank_group(int local) override {
    auto& g = rank_groups_[local];
    if (!g) g = std::make_unique<RankGroup>(*this, local);
    return *g;
  }
  ProcessGroup& local_group(int m) override {
    if (m < 1 || m > o_.local) throw RuntimeError(fmt::format("real: a local group of {} of {} GPUs", m, o_.local));
    auto& g = local_groups_[m];
    if (!g) {
      local_comms_[m] = m == o_.local && o_.launch == Launch::kLocal ? std::vector<ncclComm_t>{} : init_all(m);
      g = std::make_unique<LocalGroup>(*this, m);
    }
    return *g;
  }
  void attach(int local, const std::atomic<int>* it) override { devs_.at(static_cast<std::size_t>(local))->attach(it); }
  double peak_bytes(int local) const override { return devs_.at(static_cast<std::size_t>(local))->peak(); }
  double capacity_bytes() const override { return devs_.front()->capacity(); }
  std::string device_name() const override { return gpu_props(devs_.front()->cuda()).name; }
  std::string library() const override { return versions() + ", cuBLAS"; }
  std::string link_class() const override { return link_; }

 private:
  struct RankGroup final : public CollectiveCalls {
    RankGroup(GpuRig& r, int l) : rig(r), local(l) {}
    int rank() const override { return rig.o_.first_rank + local; }
    int size() const override { return rig.o_.world; }
    WorkPtr call(Collective c, const CollectiveOp& op, int root) override {
      rig.note(op.name, c);
      GpuDevice& d = *rig.devs_[static_cast<std::size_t>(local)];
      const std::uint64_t ticket = rig.watchdog_->begin(rank(), c, op.name, op.bucket);
      auto w = enqueue_nccl(d, rig.world_comms_[static_cast<std::size_t>(local)], size(), c, op, root);
      rig.track(ticket, w);
      return w;
    }
    GpuRig& rig;
    int local;
  };
  struct LocalGroup final : public CollectiveCalls {
    LocalGroup(GpuRig& r, int members) : rig(r), m(members) {}
    int rank() const override { return 0; }
    int size() const override { return m; }
    WorkPtr call(Collective c, const CollectiveOp& op, int root) override {
      rig.note(op.name, c);
      const auto& comms = rig.local_comms_[m].empty() ? rig.world_comms_ : rig.local_comms_[m];
      std::vector<cudaEvent_t> ends;
      const Site& site_ = rig.site_;
      NCCL(ncclGroupStart());
      std::vector<std::shared_ptr<CudaWork>> parts;
      for (int i = 0; i < m; ++i)
        parts.push_back(
            enqueue_nccl(*rig.devs_[static_cast<std::size_t>(i)], comms[static_cast<std::size_t>(i)], m, c, op, root));
      NCCL(ncclGroupEnd());
      for (auto& p : parts) ends.insert(ends.end(), p->events().begin(), p->events().end());
      auto w = std::make_shared<CudaWork>(std::move(ends));
      rig.track(rig.watchdog_->begin(0, c, op.name, op.bucket), w);
      return w;
    }
    GpuRig& rig;
    int m;
  };

  std::vector<ncclComm_t> init_all(int m) {
    std::vector<ncclComm_t> comms(static_cast<std::size_t>(m));
    std::vector<int> ids;
    for (int i = 0; i < m; ++i) ids.push_back(devs_[static_cast<std::size_t>(i)]->cuda());
    NCCL(ncclCommInitAll(comms.data(), m, ids.data()));
    return comms;
  }
  // exchange_through_file: rank 0 writes the unique id to the --init-method file, the others
  // wait for it (as torch's FileStore), up to --timeout.
  std::string exchange_through_file(const std::string& mine) {
    const std::string& path = o_.init_file;
    if (o_.first_rank == 0) {
      write_file_atomic(path, mine);
      return mine;
    }
    const double until = now_s() + o_.timeout_s;
    while (now_s() < until) {
      std::ifstream in(path, std::ios::binary);
      if (in) {
        std::stringstream s;
        s << in.rdbuf();
        if (s.str().size() == mine.size()) return s.str();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    throw RuntimeError(
        fmt::format("host {}, rank {}: --init-method file://{}: rank 0 did not write NCCL's unique id "
                    "within --timeout {} s (a peer that never arrived)",
                    site_.host, site_.rank, path, o_.timeout_s));
  }
  void track(std::uint64_t ticket, const std::shared_ptr<CudaWork>& w) {
    const std::lock_guard<std::mutex> lock(mutex_);
    in_flight_.emplace_back(ticket, w);
  }
  // poll: collectives whose events completed leave the watchdog's list.
  void poll() {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        if (stop_) return;
        auto keep = in_flight_.begin();
        for (auto& entry : in_flight_) {
          if (entry.second->done()) {
            watchdog_->end(entry.first);
          } else {
            *keep++ = entry;
          }
        }
        in_flight_.erase(keep, in_flight_.end());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  [[noreturn]] void abort_all(const std::string& what) {
    std::fprintf(stderr, "error: host %s, %s\n", site_.host.c_str(), what.c_str());
    std::fflush(stderr);
    for (ncclComm_t c : world_comms_) ncclCommAbort(c);
    for (auto& [m, comms] : local_comms_)
      for (ncclComm_t c : comms) ncclCommAbort(c);
    discard_staging_folders();  // the process ends without unwinding: --out as it was
    if (o_.launch == Launch::kMpi) mpi::abort(1);
    std::_Exit(1);
  }

  RigOptions o_;
  Site site_;
  std::string link_;
  bool p2p_ = false;
  std::unique_ptr<Watchdog> watchdog_;
  std::vector<std::unique_ptr<GpuDevice>> devs_;
  std::vector<ncclComm_t> world_comms_;
  std::map<int, std::vector<ncclComm_t>> local_comms_;
  std::map<int, std::unique_ptr<ProcessGroup>> rank_groups_, local_groups_;
  std::mutex mutex_;
  std::vector<std::pair<std::uint64_t, std::shared_ptr<CudaWork>>> in_flight_;
  bool stop_ = false;
  std::thread poller_;
};

std::shared_ptr<CudaWork> enqueue_nccl(GpuDevice& d, ncclComm_t comm, int nranks, Collective c, const CollectiveOp& op,
                                       int root) {
  const Site& site_ = d.site();
  CUDA(cudaSetDevice(d.cuda()));
  CUDA(cudaStreamWaitEvent(d.stream(Stream::kComm), d.compute_point(), 0));
  const std::size_t bytes = static_cast<std::size_t>((op.bytes + 3) / 4 * 4);
  const std::size_t floats = bytes / 4;
  cudaStream_t st = d.stream(Stream::kComm);
  // Buffers first: timed() holds the device's lock while it enqueues.
  const std::size_t block = std::max<std::size_t>(1, floats / static_cast<std::size_t>(nranks));
  char* in = c == Collective::kReduceScatter ? d.buffer(op.name, block * 4 * static_cast<std::size_t>(nranks))
                                             : d.buffer(op.name, bytes);
  char* out = c == Collective::kAllgather       ? d.buffer(op.name + "#out", bytes * static_cast<std::size_t>(nranks))
              : c == Collective::kReduceScatter ? d.buffer(op.name + "#out", block * 4)
                                                : in;
  return d.timed(Stream::kComm, d.event(Stream::kComm, op.name, op.bytes, op.bucket, -1), [&] {
    switch (c) {
      case Collective::kAllreduce:
        NCCL(ncclAllReduce(in, in, floats, ncclFloat, ncclSum, comm, st));
        break;
      case Collective::kBroadcast:
        NCCL(ncclBroadcast(in, in, bytes, ncclChar, root, comm, st));
        break;
      case Collective::kReduce:
        NCCL(ncclReduce(in, in, floats, ncclFloat, ncclSum, root, comm, st));
        break;
      case Collective::kAllgather:
        NCCL(ncclAllGather(in, out, bytes, ncclChar, comm, st));
        break;
      case Collective::kReduceScatter:
        NCCL(ncclReduceScatter(in, out, block, ncclFloat, ncclSum, comm, st));
        break;
    }
  });
}
}  // namespace

std::unique_ptr<Rig> make_gpu_rig(const RigOptions& o) { return std::make_unique<GpuRig>(o); }

}  // namespace gradsync::real
