// rig.hpp: the devices and process groups one process drives for real, on either backend.
//
//   CPU (MPI + OpenBLAS): a device is a rank's CPU with three worker threads (compute, comm,
//   copy streams); compute runs sgemm of the op's FLOPs or streams its bytes through the
//   parameter and gradient buffers; collectives are MPI's non-blocking ones over the world
//   (mpirun/srun) or, for ranks that are threads of this process (--launch local and DP),
//   shared-memory collectives between the threads.
//   GPU (CUDA + NCCL): a device is a GPU with a compute, an NCCL and a copy stream; compute runs
//   cuBLAS GEMMs or a memory-bound kernel; collectives are NCCL's.
//
//   RigOptions o; o.world = 2; o.first_rank = rank; o.local = 1; ...
//   auto rig = make_rig(o);            // throws RuntimeError naming what failed
//   DdpStep step(model, costs, opts, batch, host, rig->device(0), rig->rank_group(0));
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/units.hpp"
#include "real/engine.hpp"

namespace gradsync::real {

// Launch: how the ranks of the world were started.
enum class Launch { kMpi, kLocal, kFile };

struct RigOptions {
  std::string backend = "cpu";  // "cpu" or "gpu"
  Launch launch = Launch::kLocal;
  int world = 1;                   // ranks in the world group
  int first_rank = 0;              // global rank of local device 0
  int local = 1;                   // devices this process drives (ranks first_rank .. first_rank + local - 1)
  int gpu_offset = 0;              // GPU backend: CUDA device of local device 0 (LOCAL_RANK)
  std::string precision = "fp32";  // GPU GEMMs: fp32, tf32, bf16 or fp16 (the CPU runs fp32)
  Bytes parameter_bytes = 0;
  Bytes gradient_bytes = 0;
  double timeout_s = 600;
  std::string init_file;  // --init-method file://PATH (GPU backend: NCCL's unique id goes there)
  std::string host_name;  // for errors: "host h, rank r"
  // holds: what each rank's parameter_bytes and gradient_bytes are, as the host-memory check says it.
  std::string holds = "its parameters, gradients and DDP buckets, before activations";
};

class Rig {
 public:
  virtual ~Rig() = default;
  virtual Device& device(int local) = 0;
  // rank_group: local device `local`'s view of the world group (DDP).
  virtual ProcessGroup& rank_group(int local) = 0;
  // local_group: one group over local devices 0..m-1, called once for all (DataParallel).
  virtual ProcessGroup& local_group(int m) = 0;
  // attach: events device `local` records are tagged with this iteration.
  virtual void attach(int local, const std::atomic<int>* iteration) = 0;
  // peak_bytes: the most device memory device `local` held.
  virtual double peak_bytes(int local) const = 0;
  // capacity_bytes: the device's memory.
  virtual double capacity_bytes() const = 0;
  // device_name / library: the hardware and the libraries, for reports and calibrations.
  virtual std::string device_name() const = 0;
  virtual std::string library() const = 0;
  // link_class: what the world's collectives run over (shm, net, nvlink, pcie, local).
  virtual std::string link_class() const = 0;
  Recorder& recorder() { return rec_; }
  // kinds: the collective each event name was issued as (rank 0's calls make result.collectives).
  void note(const std::string& name, Collective c) {
    const std::lock_guard<std::mutex> lock(kinds_mutex_);
    kinds_.emplace(name, c);
  }
  std::map<std::string, Collective> kinds() {
    const std::lock_guard<std::mutex> lock(kinds_mutex_);
    return kinds_;
  }

 protected:
  Recorder rec_;
  std::mutex kinds_mutex_;
  std::map<std::string, Collective> kinds_;
};

std::unique_ptr<Rig> make_cpu_rig(const RigOptions& o);
// make_gpu_rig: RuntimeError when the GPU backend is not built or no GPU is there.
std::unique_ptr<Rig> make_gpu_rig(const RigOptions& o);
// make_rig: the rig of o.backend ("gpu" or "cpu").
std::unique_ptr<Rig> make_rig(const RigOptions& o);

}  // namespace gradsync::real
