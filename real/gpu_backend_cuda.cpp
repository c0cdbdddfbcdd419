// gpu_backend_cuda.cpp: the GPU engine (CUDA + cuBLAS + NCCL). A device is one GPU with a
// compute, an NCCL and a copy stream; every op is timed with CUDA events that are turned into
// host-clock times when the device synchronizes. Collectives are NCCL's: one communicator per
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
#include "real/gpu_backend.hpp"
#include "real/gpu_kernels.hpp"
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

// Where an error happened, for its message.
struct Site {
  std::string host;
  int rank = 0;
};

void check_cuda(cudaError_t e, const char* call, const char* file, int line, const Site& at) {
  if (e == cudaSuccess) return;
  throw RuntimeError(fmt::format("host {}, rank {}: {} failed at {}:{}: {}: {}", at.host, at.rank, call, file, line,
                                 cudaGetErrorName(e), cudaGetErrorString(e)));
}
void check_nccl(ncclResult_t e, const char* call, const char* file, int line, const Site& at) {
  if (e == ncclSuccess) return;
  throw RuntimeError(fmt::format("host {}, rank {}: {} failed at {}:{}: {}", at.host, at.rank, call, file, line,
                                 ncclGetErrorString(e)));
}
void check_cublas(cublasStatus_t e, const char* call, const char* file, int line, const Site& at) {
  if (e == CUBLAS_STATUS_SUCCESS) return;
  throw RuntimeError(fmt::format("host {}, rank {}: {} failed at {}:{}: {}", at.host, at.rank, call, file, line,
                                 cublasGetStatusString(e)));
}
#define CUDA(call) check_cuda((call), #call, __FILE__, __LINE__, site_)
#define NCCL(call) check_nccl((call), #call, __FILE__, __LINE__, site_)
#define CUBLAS(call) check_cublas((call), #call, __FILE__, __LINE__, site_)

constexpr int kMaxGpuGemm = 8192;  // largest square GEMM side; larger ops repeat it

// CudaWork: complete when every one of its events has (the events may be on several GPUs).
class CudaWork final : public RealWork {
 public:
  explicit CudaWork(std::vector<cudaEvent_t> events) : events_(std::move(events)) {}
  void wait() override {
    for (cudaEvent_t e : events_) {
      const cudaError_t err = cudaEventSynchronize(e);
      if (err != cudaSuccess)
        throw RuntimeError(fmt::format("cudaEventSynchronize: {}: {}", cudaGetErrorName(err), cudaGetErrorString(err)));
    }
  }
  bool done() const override {
    for (cudaEvent_t e : events_)
      if (cudaEventQuery(e) != cudaSuccess) return false;
    return true;
  }
  const std::vector<cudaEvent_t>& events() const { return events_; }

 private:
  std::vector<cudaEvent_t> events_;  // owned by the devices' event pools
};

class GpuDevice final : public Device {
 public:
  GpuDevice(int index, int cuda_device, Recorder& rec, const RigOptions& o)
      : index_(index), cuda_(cuda_device), rec_(rec), site_{o.host_name, index} {
    CUDA(cudaSetDevice(cuda_));
    for (cudaStream_t* s : {&compute_, &comm_, &copy_}) CUDA(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
    CUBLAS(cublasCreate(&blas_));
    CUBLAS(cublasSetStream(blas_, compute_));
    gemm_type_ = o.precision == "bf16" ? CUDA_R_16BF : o.precision == "fp16" ? CUDA_R_16F : CUDA_R_32F;
    compute_type_ = o.precision == "tf32" ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    params_ = alloc(std::max<std::size_t>(256, static_cast<std::size_t>(o.parameter_bytes)), "parameters");
    params_size_ = std::max<std::size_t>(256, static_cast<std::size_t>(o.parameter_bytes));
    grads_ = alloc(std::max<std::size_t>(256, static_cast<std::size_t>(o.gradient_bytes)), "gradients");
    grads_size_ = std::max<std::size_t>(256, static_cast<std::size_t>(o.gradient_bytes));
    CUDA(cudaEventCreate(&epoch_));
    CUDA(cudaDeviceSynchronize());
    CUDA(cudaEventRecord(epoch_, compute_));
    CUDA(cudaEventSynchronize(epoch_));
    host_epoch_ = now_s();
  }
  ~GpuDevice() override {
    cudaSetDevice(cuda_);
    cudaDeviceSynchronize();
    for (auto& [p, n] : allocations_) cudaFree(p);
    if (pinned_) cudaFreeHost(pinned_);
    for (cudaEvent_t e : pool_) cudaEventDestroy(e);
    cudaEventDestroy(epoch_);
    cublasDestroy(blas_);
    for (cudaStream_t s : {compute_, comm_, copy_}) cudaStreamDestroy(s);
  }
  int index() const override { return index_; }
  int cuda() const { return cuda_; }
  void attach(const std::atomic<int>* it) { iteration_ = it; }
  const Site& site() const { return site_; }

  WorkPtr compute(const ComputeOp& op, Stream s) override {
    CUDA(cudaSetDevice(cuda_));
    const int k = std::max(1, op.kernels);
    return timed(s, event(s, op.name, static_cast<Bytes>(op.bytes), op.bucket, -1), [&] {
      for (int i = 0; i < k; ++i) {
        if (op.kind != OpKind::kMemory && op.flops > 0) {
          gemm(op.flops / k, stream(s));
        } else {
          memory(static_cast<std::size_t>(op.bytes / k / 2), stream(s));
        }
      }
    });
  }
  WorkPtr copy_to(Device& dst, const CopyOp& op, Stream s) override {
    auto& peer = static_cast<GpuDevice&>(dst);
    CUDA(cudaSetDevice(cuda_));
    return timed(s, event(s, op.name, op.bytes, -1, peer.index()), [&] {
      if (&peer == this) return;
      char* to = peer.staging(static_cast<std::size_t>(op.bytes));
      cyclic(op.bytes, params_size_, [&](std::size_t off, std::size_t n) {
        CUDA(cudaMemcpyPeerAsync(to + 0, peer.cuda(), params_ + off, cuda_, n, stream(s)));
      });
    });
  }
  WorkPtr copy_from_host(const CopyOp& op, Stream s) override {
    CUDA(cudaSetDevice(cuda_));
    constexpr std::size_t kPinned = 64ull << 20;
    if (!pinned_) CUDA(cudaMallocHost(&pinned_, kPinned));
    char* to = staging(std::min<std::size_t>(kPinned, static_cast<std::size_t>(op.bytes)));
    return timed(s, event(s, op.name, op.bytes, -1, -1), [&] {
      cyclic(op.bytes, kPinned, [&](std::size_t, std::size_t n) {
        CUDA(cudaMemcpyAsync(to, pinned_, n, cudaMemcpyHostToDevice, stream(s)));
      });
    });
  }
  void stream_wait(Stream s, Work& w) override {
    CUDA(cudaSetDevice(cuda_));
    for (cudaEvent_t e : static_cast<CudaWork&>(w).events()) CUDA(cudaStreamWaitEvent(stream(s), e, 0));
  }
  void synchronize() override {
    CUDA(cudaSetDevice(cuda_));
    for (cudaStream_t st : {compute_, comm_, copy_}) CUDA(cudaStreamSynchronize(st));
    flush();
  }

  cudaStream_t stream(Stream s) const { return s == Stream::kComm ? comm_ : s == Stream::kCopy ? copy_ : compute_; }
  TraceEvent event(Stream s, const std::string& name, Bytes bytes, int bucket, int peer) const {
    return device_event(index_, iteration_, s, name, bytes, bucket, peer);
  }
  // timed: record start, enqueue, record end on stream s; the end event is the work.
  template <class F>
  std::shared_ptr<CudaWork> timed(Stream s, TraceEvent e, F&& enqueue) {
    const std::lock_guard<std::mutex> lock(mutex_);
    cudaEvent_t start = take(), end = take();
    CUDA(cudaEventRecord(start, stream(s)));
    enqueue();
    CUDA(cudaEventRecord(end, stream(s)));
    pending_.push_back({start, end, std::move(e)});
    return std::make_shared<CudaWork>(std::vector<cudaEvent_t>{end});
  }
  // compute_point: an event on the compute stream now (c10d's NCCL stream waits for it).
  cudaEvent_t compute_point() {
    const std::lock_guard<std::mutex> lock(mutex_);
    cudaEvent_t e = take();
    CUDA(cudaEventRecord(e, compute_));
    spent_.push_back(e);
    return e;
  }
  char* buffer(const std::string& name, std::size_t bytes) {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto& [p, n] = buffers_[name];
    if (bytes > n) {
      if (p) release(p);
      p = alloc(bytes, name);
      n = bytes;
    }
    return p;
  }
  double peak() const { return peak_; }
  double capacity() const {
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, cuda_);
    return static_cast<double>(prop.totalGlobalMem);
  }

 private:
  char* alloc(std::size_t bytes, const std::string& what) {
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
      cudaGetLastError();
      throw RuntimeError(
          fmt::format("host {}, rank {}: out of GPU memory: cudaMalloc of {} bytes for {} failed ({} "
                      "bytes held): {}: {}",
                      site_.host, site_.rank, bytes, what, allocated_, cudaGetErrorName(e), cudaGetErrorString(e)));
    }
    allocations_[p] = bytes;
    allocated_ += static_cast<double>(bytes);
    peak_ = std::max(peak_, allocated_);
    return static_cast<char*>(p);
  }
  void release(char* p) {
    cudaFree(p);
    allocated_ -= static_cast<double>(allocations_[p]);
    allocations_.erase(p);
  }
  char* staging(std::size_t bytes) {
    constexpr std::size_t kGpuStaging = 256ull << 20;
    return buffer("#staging", std::min(std::max<std::size_t>(bytes, 256), kGpuStaging));
  }
  template <class F>
  static void cyclic(Bytes bytes, std::size_t size, F&& piece) {
    std::size_t left = static_cast<std::size_t>(bytes), off = 0;
    while (left > 0) {
      const std::size_t n = std::min(left, size - off);
      piece(off, n);
      left -= n;
      off = (off + n) % size;
    }
  }
  void memory(std::size_t half, cudaStream_t st) {
    cyclic(half, std::min(params_size_, grads_size_), [&](std::size_t off, std::size_t n) {
      const std::size_t words = std::max<std::size_t>(1, n / 16);
      CUDA(launch_touch(grads_ + off / 16 * 16, params_ + off / 16 * 16, words, st));
    });
  }
  void gemm(double flops, cudaStream_t st) {
    const double cube = flops / 2.0;
    const double calls = std::max(1.0, std::ceil(cube / (static_cast<double>(kMaxGpuGemm) * kMaxGpuGemm * kMaxGpuGemm)));
    const int n = std::max(1, static_cast<int>(std::lround(std::cbrt(cube / calls))));
    const std::size_t elem = gemm_type_ == CUDA_R_32F ? 4 : 2;
    const std::size_t mat = static_cast<std::size_t>(n) * static_cast<std::size_t>(n) * elem;
    char* a = nullptr;
    {
      auto& [p, size] = buffers_["#gemm"];
      if (3 * mat > size) {
        if (p) release(p);
        p = alloc(3 * mat, "GEMM operands");
        size = 3 * mat;
      }
      a = p;
    }
    const float alpha = 1.0f, beta = 0.0f;
    CUBLAS(cublasSetStream(blas_, st));
    for (int i = 0; i < static_cast<int>(calls); ++i) {
      CUBLAS(cublasGemmEx(blas_, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, gemm_type_, n, a + mat, gemm_type_, n,
                          &beta, a + 2 * mat, gemm_type_, n, compute_type_, CUBLAS_GEMM_DEFAULT));
    }
  }
  cudaEvent_t take() {
    if (!free_.empty()) {
      cudaEvent_t e = free_.back();
      free_.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    CUDA(cudaEventCreate(&e));
    pool_.push_back(e);
    return e;
  }
  // flush: completed events become trace events on the host clock; their CUDA events are reused.
  void flush() {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (auto& p : pending_) {
      float a = 0, b = 0;
      CUDA(cudaEventElapsedTime(&a, epoch_, p.start));
      CUDA(cudaEventElapsedTime(&b, epoch_, p.end));
      p.event.start_s = host_epoch_ + a / 1e3;
      p.event.end_s = host_epoch_ + b / 1e3;
      rec_.add(std::move(p.event));
      free_.push_back(p.start);
      free_.push_back(p.end);
    }
    pending_.clear();
    for (cudaEvent_t e : spent_) free_.push_back(e);
    spent_.clear();
  }

  struct Pending {
    cudaEvent_t start, end;
    TraceEvent event;
  };
  int index_, cuda_;
  Recorder& rec_;
  Site site_;
  const std::atomic<int>* iteration_ = nullptr;
  std::mutex mutex_;
  cudaStream_t compute_ = nullptr, comm_ = nullptr, copy_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  cudaDataType_t gemm_type_ = CUDA_R_32F;
  cublasComputeType_t compute_type_ = CUBLAS_COMPUTE_32F;
  char* params_ = nullptr;
  char* grads_ = nullptr;
  std::size_t params_size_ = 0, grads_size_ = 0;
  void* pinned_ = nullptr;
  std::map<void*, std::size_t> allocations_;
  std::map<std::string, std::pair<char*, std::size_t>> buffers_;
  double allocated_ = 0, peak_ = 0;
  cudaEvent_t epoch_ = nullptr;
  double host_epoch_ = 0;
  std::vector<cudaEvent_t> pool_, free_, spent_;
  std::deque<Pending> pending_;
};

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
