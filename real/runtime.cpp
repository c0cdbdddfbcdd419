// runtime.cpp: this process's place in the world: how it was launched (locally, by mpirun/srun,
// or by torchrun with a file:// rendezvous), its ranks, backend and hosts (run.hpp).
#include <unistd.h>

#include <fmt/format.h>

#include <cstdlib>
#include <set>

#include "core/error.hpp"
#include "real/gpu_backend.hpp"
#include "real/mpi.hpp"
#include "real/run.hpp"

namespace gradsync::real {
namespace {

int env_int(const char* name, const char* why) {
  const char* v = std::getenv(name);
  if (!v || !*v) throw UsageError(fmt::format("{}: {} is not set; expected it as torchrun sets it", why, name));
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > 1 << 20)
    throw UsageError(fmt::format("{}: {}=\"{}\" is not a non-negative integer", why, name, v));
  return static_cast<int>(x);
}

int local_rank_from_env() {
  for (const char* k : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID", "LOCAL_RANK"})
    if (const char* v = std::getenv(k); v && *v) return std::atoi(v);
  return 0;
}

std::string hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

}  // namespace

Runtime::Runtime(const RealOptions& o) : o_(o), host_(hostname()) {
  if (!(o.timeout_s > 0)) throw UsageError(fmt::format("--timeout {}: expected seconds > 0", o.timeout_s));
  if (o.backend != "auto" && o.backend != "cpu" && o.backend != "gpu")
    throw UsageError(fmt::format("--backend \"{}\": expected auto, cpu or gpu", o.backend));
  if (o.launch != "auto" && o.launch != "local" && o.launch != "mpi")
    throw UsageError(fmt::format("--launch \"{}\": expected auto, local or mpi", o.launch));
  const GpuBackendInfo info = gpu_backend_info();
  if (o.backend == "gpu" && !info.compiled) throw UsageError(fmt::format("--backend gpu: {}", info.summary));
  if (o.backend == "gpu" && info.visible_gpus == 0) throw RuntimeError(fmt::format("--backend gpu: {}", info.summary));
  backend_ = o.backend == "cpu" ? "cpu" : o.backend == "gpu" ? "gpu" : (info.visible_gpus > 0 ? "gpu" : "cpu");

  const std::string launcher = mpi::launcher();
  if (!o.init_method.empty()) {
    if (o.launch == "local") throw UsageError("--init-method and --launch local exclude each other");
    if (o.init_method.rfind("file://", 0) != 0 || o.init_method.size() <= 7) {
      throw UsageError(fmt::format(
          "--init-method \"{}\": expected file:///PATH (env:// and tcp:// need a store server gradsync does not run)",
          o.init_method));
    }
    init_file_ = o.init_method.substr(7);
    launch_ = Launch::kFile;
    launcher_ = "file";
    world_ = env_int("WORLD_SIZE", "--init-method");
    rank_ = env_int("RANK", "--init-method");
    gpu_offset_ = env_int("LOCAL_RANK", "--init-method");
    if (world_ < 1 || rank_ >= world_)
      throw UsageError(
          fmt::format("--init-method: RANK {} and WORLD_SIZE {}: expected 0 <= RANK < WORLD_SIZE", rank_, world_));
    processes_ = world_;
    local_ = 1;
  } else if (o.launch == "local" || (o.launch == "auto" && launcher.empty())) {
    // Each of the launcher's processes would run the whole job alone, all into one --out.
    if (const int n = mpi::launcher_size(); !launcher.empty() && n > 1) {
      throw on_every_rank(UsageError(fmt::format(
          "--launch local under {} with {} processes: each would run the whole job on its own; drop --launch local "
          "(the launcher's processes are then the job's ranks) or start one process",
          launcher, n)));
    }
    launch_ = Launch::kLocal;
    launcher_ = "local";
    world_ = o.world_size > 0 ? o.world_size : (backend_ == "gpu" ? info.visible_gpus : 1);
    local_ = world_;
    hosts_ = 1;
  } else {
    if (launcher.empty())
      throw UsageError("--launch mpi: this process was not started by mpirun or srun (no OMPI_*/PMI_*/SLURM_* rank)");
    mpi::init();
    mpi_ = true;
    launch_ = Launch::kMpi;
    launcher_ = launcher;
    world_ = mpi::size();
    rank_ = mpi::rank();
    processes_ = world_;
    local_ = 1;
    gpu_offset_ = local_rank_from_env();
    // The hosts the ranks span: their distinct host names, counted on rank 0 and shared.
    const std::vector<std::string> names = mpi::gather(host_);
    hosts_ = std::stoi(mpi::broadcast(std::to_string(std::set<std::string>(names.begin(), names.end()).size())));
    if (o.world_size > 0 && o.world_size != world_) {
      throw UsageError(fmt::format("--world-size {}: {} started {} ranks; expected the same or no --world-size",
                                   o.world_size, launcher, world_));
    }
  }
  if (backend_ == "gpu") {
    const int needed = launch_ == Launch::kLocal ? world_ : gpu_offset_ + 1;
    if (needed > info.visible_gpus) {
      throw RuntimeError(fmt::format(
          "host {}: {} needs {} GPU{}, {} visible ({})", host_,
          launch_ == Launch::kLocal ? fmt::format("world size {}", world_) : fmt::format("local rank {}", gpu_offset_),
          needed, needed == 1 ? "" : "s", info.visible_gpus, info.summary));
    }
  }
}

Runtime::~Runtime() {
  if (mpi_) mpi::finalize();
}

RigOptions Runtime::rig_options(Bytes parameter_bytes, Bytes gradient_bytes) const {
  RigOptions r;
  r.backend = backend_;
  r.launch = launch_;
  r.world = world_;
  r.first_rank = rank_;
  r.local = local_;
  r.gpu_offset = gpu_offset_;
  r.parameter_bytes = parameter_bytes;
  r.gradient_bytes = gradient_bytes;
  r.timeout_s = o_.timeout_s;
  r.init_file = init_file_;
  r.host_name = host_;
  return r;
}

std::vector<std::string> Runtime::gather(const std::string& mine) const {
  if (mpi_) return mpi::gather(mine);
  return {mine};
}

std::string Runtime::broadcast(const std::string& from_root) const {
  if (mpi_) return mpi::broadcast(from_root);
  return from_root;
}

void Runtime::barrier() const {
  if (mpi_) mpi::barrier();
}

}  // namespace gradsync::real
