// calibrate.cpp: `gradsync calibrate`: nccl-tests-style sweeps of the collectives, copies, each
// compute kind and the launch overhead on this machine, into a Calibration (real/run.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <vector>

#include "core/error.hpp"
#include "real/engine.hpp"
#include "real/gpu_backend.hpp"
#include "real/rig.hpp"
#include "real/run.hpp"

namespace gradsync::real {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// make_monotone: a table's times made non-decreasing in size, as read_calibration takes them.
void make_monotone(CalibrationTable& t) {
  double best = 0;
  for (auto& p : t.points) p.second = best = std::max(best, p.second);
}

// kCalibrateHolds: what a calibrating rank's fixed buffers are (no model: calibrate has none).
constexpr const char* kCalibrateHolds = "the fixed buffers a calibrating rank streams its copies and kernels through";

// sizes_between: lo, lo x factor, ... up to hi, and hi itself where the steps fall short of it (8 B
// x 4 a row stops at 32 MiB under --max-bytes 64MiB): a calibration covers the range it was asked
// for, so no simulated size within it is extrapolated. Each size is a multiple of align.
std::vector<double> sizes_between(double lo, double hi, double factor, double align) {
  std::vector<double> out;
  const auto add = [&](double x) {
    const double a = std::max(align, std::floor(x / align) * align);
    if (out.empty() || a > out.back()) out.push_back(a);
  };
  for (double x = lo; x <= hi * (1 + 1e-12); x *= factor) add(x);
  add(hi);
  return out;
}

// check_calibration_fits: the largest size must fit where calibrate puts it: a collective's input
// and output buffers on each rank (host memory for the CPU ranks of this process, device memory
// for a GPU), with the host copy's staging. UsageError naming what was asked and the limit.
void check_calibration_fits(const CalibrateOptions& o, Runtime& rt) {
  constexpr double kBuffers = 2;  // input and output of the largest collective
  const auto gib = [](double b) { return human_bytes(b); };
  if (rt.backend() == "gpu") {
    const double capacity = gpu_props(rt.rig_options(0, 0).gpu_offset).memory_bytes;
    if (kBuffers * o.max_bytes > capacity) {
      throw UsageError(
          fmt::format("--max-bytes {}: calibrating needs {} buffers of that size on each GPU ({}); "
                      "the GPU has {}; lower --max-bytes",
                      human_bytes(o.max_bytes), kBuffers, gib(kBuffers * o.max_bytes), gib(capacity)));
    }
    return;
  }
  // A CPU rank holds its collective's input and output, grown size by size (the sizes it outgrew
  // kept until the next synchronize: a third more at 4x steps), and MPI's own scratch for a
  // reduction of that size: 5 x --max-bytes, measured 4.4 x (1 GiB: 13 GB a rank until the
  // collectives shared their buffers, 2026-12-02). Every rank on this host counts: this process's,
  // or under mpirun the world's share of each host.
  constexpr double kHostBuffers = 5;
  const int here = std::max(rt.local(), rt.hosts() > 0 ? (rt.world() + rt.hosts() - 1) / rt.hosts() : 1);
  const double capacity = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  const double need = kHostBuffers * o.max_bytes * here;
  if (capacity > 0 && need > capacity) {
    throw UsageError(fmt::format(
        "--max-bytes {}: calibrating needs about {} times that for each of this host's {} CPU rank{} ({}); this "
        "machine has {} of memory; lower --max-bytes",
        human_bytes(o.max_bytes), kHostBuffers, here, here == 1 ? "" : "s", gib(need), gib(capacity)));
  }
}

// calibration_precision: --precision checked against the backend and the GPU, or its default (a
// scenario's: bf16 where the GPU has it, else fp16; fp32 on CPUs, which OpenBLAS's sgemm runs).
std::string calibration_precision(const CalibrateOptions& o, Runtime& rt) {
  const std::string& p = o.precision;
  if (!p.empty() && p != "fp32" && p != "tf32" && p != "bf16" && p != "fp16")
    throw UsageError(fmt::format("--precision \"{}\": expected fp32, tf32, bf16 or fp16", p));
  if (rt.backend() == "cpu") {
    if (!p.empty() && p != "fp32")
      throw UsageError(
          fmt::format("--precision {}: the CPU backend computes in fp32 (OpenBLAS sgemm); expected fp32", p));
    return "fp32";
  }
  const GpuProps g = gpu_props(rt.rig_options(0, 0).gpu_offset);
  if ((p == "bf16" || p == "tf32") && g.sm_version < 80)
    throw UsageError(
        fmt::format("--precision {}: {} (compute capability {}.{}) has no {} tensor cores; expected fp32 "
                    "or fp16",
                    p, g.name, g.sm_version / 10, g.sm_version % 10, p));
  if (!p.empty()) return p;
  return g.sm_version >= 80 ? "bf16" : "fp16";
}

}  // namespace

CalibrationRun calibrate(const CalibrateOptions& o, Runtime& rt) {
  if (!(o.min_bytes > 0) || o.max_bytes < o.min_bytes)
    throw UsageError(fmt::format("sizes {}..{}: expected 0 < --min-bytes <= --max-bytes", o.min_bytes, o.max_bytes));
  if (!(o.step_factor > 1)) throw UsageError(fmt::format("--step-factor {}: expected a number > 1", o.step_factor));
  if (o.repeats < 1) throw UsageError(fmt::format("--repeats {}: expected an integer >= 1", o.repeats));
  const double max_flops = o.max_flops > 0 ? o.max_flops : (rt.backend() == "gpu" ? 1e12 : 2e10);
  // The GEMM sweep starts at kFirstFlops: a largest size below it would time none, and a
  // calibration without compute points is one the loader refuses.
  constexpr double kFirstFlops = 1e6;
  if (max_flops < kFirstFlops)
    throw UsageError(fmt::format("--max-flops {:g}: expected at least 1e6, the sweep's first GEMM", max_flops));
  check_calibration_fits(o, rt);

  CalibrationRun run;
  Calibration& cal = run.calibration;
  RigOptions ro = rt.rig_options(64 << 20, 64 << 20);
  ro.holds = kCalibrateHolds;
  ro.precision = calibration_precision(o, rt);
  auto rig = make_rig(ro);
  cal.precision = ro.precision;
  cal.backend = rt.backend();
  cal.host = rt.host();
  cal.device = rig->device_name();
  cal.library = rig->library();
  cal.ranks = rt.world();
  const int n = rt.world();

  // Collectives: every rank (process or thread) runs the same loop; rank 0 times it.
  for (Collective c : kCollectives) {
    const double align = (c == Collective::kAllgather || c == Collective::kReduceScatter) ? 4.0 * n : 4.0;
    const std::vector<double> sizes = sizes_between(o.min_bytes, o.max_bytes, o.step_factor, align);
    std::vector<double> times(sizes.size());
    auto body = [&](int i) {
      ProcessGroup& pg = rig->rank_group(i);
      for (std::size_t k = 0; k < sizes.size(); ++k) {
        CollectiveOp op;
        // One name for every collective: they share their device buffers (each name has its own:
        // five collectives' buffers held 12 x --max-bytes a rank).
        op.name = "calibrate:collective";
        op.bytes = static_cast<Bytes>(c == Collective::kAllgather ? sizes[k] / n : sizes[k]);
        CollectiveOp sync{"calibrate:sync", 4, DType::kFloat32, -1};
        issue_collective(pg, c, op, 0)->wait();  // warm-up (buffers allocated)
        pg.allreduce(sync)->wait();
        const double t0 = now_s();
        for (int r = 0; r < o.repeats; ++r) issue_collective(pg, c, op, 0)->wait();
        const double t = (now_s() - t0) / o.repeats;
        if (i == 0) times[k] = t;
      }
    };
    if (rt.local() == 1) {
      body(0);
    } else {
      RealHost threads(rig->recorder(), {});
      threads.parallel(rt.local(), body);
    }
    CollectiveTable t;
    t.collective = c;
    t.ranks = n;
    t.link_class = rig->link_class();
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      t.table.points.emplace_back(sizes[k], times[k]);
      const double alg = times[k] > 0 ? sizes[k] / times[k] / 1e9 : 0.0;
      run.rows.push_back({std::string(collective_name(c)), sizes[k], times[k], alg, alg * bus_factor(c, n)});
    }
    cal.collectives.push_back(std::move(t));
  }

  // The rest runs on the root's device 0 while the other ranks wait at a barrier.
  if (rt.root()) {
    Device& dev = rig->device(0);
    // A step's ops run back to back on their stream, so an op is timed in a run of several issued
    // without waiting between them (as nccl-tests times its iterations), enough to fill about 1 ms:
    // timed one at a time each paid the stream's wake-up too (2-4 us for an 8 B memory op on a quiet
    // host, 40-140 us under load; a new user's validate of the calibrating host was +43% so, until
    // 2026-12-02). The median of --repeats runs.
    auto timed = [&](const std::function<WorkPtr()>& issue) {
      const double w0 = now_s();
      issue()->wait();  // warm-up, and the size of a run
      const double single = now_s() - w0;
      const int run_of = std::clamp(static_cast<int>(1e-3 / std::max(single, 1e-9)), 1, 64);
      std::vector<double> ts;
      for (int r = 0; r < o.repeats; ++r) {
        const double t0 = now_s();
        WorkPtr last;
        for (int k = 0; k < run_of; ++k) last = issue();
        last->wait();
        ts.push_back((now_s() - t0) / run_of);
      }
      return median(ts);
    };
    const std::vector<double> byte_sizes = sizes_between(std::max(4.0, o.min_bytes), o.max_bytes, o.step_factor, 4);
    for (double b : byte_sizes) {
      const double t = timed([&] { return dev.copy_from_host({"calibrate:h2d", static_cast<Bytes>(b)}); });
      cal.host_copy.points.emplace_back(b, t);
      run.rows.push_back({"host_to_device", b, t, b / t / 1e9, 0});
    }
    // Peer copies need two devices in this process: the local ones, or a second rig on the CPU.
    std::unique_ptr<Rig> pair;
    Device* a = nullptr;
    Device* peer = nullptr;
    if (rt.local() >= 2) {
      a = &rig->device(0);
      peer = &rig->device(1);
    } else if (rt.backend() == "cpu" || gpu_backend_info().visible_gpus >= 2) {
      RigOptions po = rt.rig_options(64 << 20, 64 << 20);
      po.holds = kCalibrateHolds;
      po.launch = Launch::kLocal;
      po.world = po.local = 2;
      po.first_rank = 0;
      po.gpu_offset = 0;
      pair = make_rig(po);
      a = &pair->device(0);
      peer = &pair->device(1);
    }
    if (a && peer) {
      for (double b : byte_sizes) {
        const double t = timed([&] { return a->copy_to(*peer, {"calibrate:peer", static_cast<Bytes>(b)}); });
        cal.peer_copy.points.emplace_back(b, t);
        run.rows.push_back({"peer_copy", b, t, b / t / 1e9, 0});
      }
    }
    pair.reset();
    for (OpKind kind : {OpKind::kMatmul, OpKind::kConv, OpKind::kAttention}) {
      CalibrationTable& t = cal.compute[kind];
      // 1e6 x 4 a row, then --max-flops itself where the steps skip it (as sizes_between).
      for (double f : sizes_between(kFirstFlops, max_flops, 4, 1)) {
        ComputeOp op;
        op.name = fmt::format("calibrate:{}", op_kind_name(kind));
        op.kind = kind;
        op.flops = f;
        const double sec = timed([&] { return dev.compute(op); });
        t.points.emplace_back(f, sec);
        run.rows.push_back({std::string(op_kind_name(kind)), f, sec, f / sec / 1e9, 0});
      }
    }
    CalibrationTable& mem = cal.compute[OpKind::kMemory];
    for (double bb : byte_sizes) {
      ComputeOp op;
      op.name = "calibrate:memory";
      op.kind = OpKind::kMemory;
      op.bytes = std::max(8.0, bb);
      // A memory kernel moves at least 8 B: the sizes below are that size again, timed once (a
      // table with one size twice is refused where it is loaded).
      if (!mem.points.empty() && op.bytes <= mem.points.back().first) continue;
      const double sec = timed([&] { return dev.compute(op); });
      mem.points.emplace_back(op.bytes, sec);
      run.rows.push_back({"memory", op.bytes, sec, op.bytes / sec / 1e9, 0});
    }
    // Launch overhead: host time to issue a tiny kernel, averaged over many.
    ComputeOp tiny;
    tiny.name = "calibrate:launch";
    tiny.kind = OpKind::kMemory;
    tiny.bytes = 8;
    dev.synchronize();
    constexpr int kLaunches = 2000;
    const double t0 = now_s();
    for (int i = 0; i < kLaunches; ++i) dev.compute(tiny);
    cal.launch_s = (now_s() - t0) / kLaunches;
    dev.synchronize();
    // Every table made non-decreasing in time, as read_calibration does, so that the file's points
    // and its fitted segments are what a simulation uses (a noisy larger size measured faster than
    // a smaller one gave a "flat" segment slower than both; the printed rows keep what was timed).
    for (auto& [kind, t] : cal.compute) make_monotone(t);
    make_monotone(cal.peer_copy);
    make_monotone(cal.host_copy);
  }
  for (CollectiveTable& t : cal.collectives) make_monotone(t.table);
  rig->recorder().take();
  rt.barrier();
  return run;
}

}  // namespace gradsync::real
