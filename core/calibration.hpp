// calibration.hpp: what `gradsync calibrate` measured on real hardware, as the simulator uses
// it. Every table holds measured (size, seconds) points, size in bytes (copies, collectives,
// memory-bound kernels) or FLOPs (GEMM kinds); between two points the time is the straight line
// through them, a fitted latency + size / bandwidth per size segment, and past the largest point
// the last segment goes on when that point was bandwidth-bound (else the time grows in proportion
// from it). Below the smallest point the smallest point's time holds (latency bound). Times are
// made non-decreasing in size when read (measurement noise).
//
//   const Calibration c = read_calibration("calibration.yaml");
//   c.collective_time(Collective::kAllreduce, /*ranks=*/2, 64 << 20)   // seconds, or nullopt
//   write_file_atomic("calibration.yaml", calibration_yaml(c));
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/backend.hpp"

namespace gradsync {

// CalibrationTable: measured points, sizes strictly increasing.
struct CalibrationTable {
  std::vector<std::pair<double, double>> points;  // (bytes or FLOPs, seconds)

  // time: the fitted time at `size` (0 for size 0); requires at least one point.
  double time(double size) const;
  // Segment: the fit between two neighbouring points.
  struct Segment {
    double from = 0, to = 0;
    double latency_s = 0;  // the line's value at size 0
    double rate = 0;       // size per second along the line (bytes/s or FLOP/s)
  };
  std::vector<Segment> segments() const;
};

// CollectiveTable: one collective among `ranks` ranks over `link_class` (shm, net, nvlink,
// pcie, local). Sizes are nccl-tests' (the buffer of each rank; allgather: the whole output).
struct CollectiveTable {
  Collective collective = Collective::kAllreduce;
  int ranks = 0;
  std::string link_class;
  CalibrationTable table;
};

struct Calibration {
  std::string origin;                          // the file it came from (errors and reports)
  std::string backend;                         // "cpu" (MPI + OpenBLAS) or "gpu" (CUDA + NCCL)
  std::string host;                            // the machine's host name
  std::string device;                          // the GPU's or CPU's name as the driver reports it
  std::string library;                         // versions: "Open MPI 4.1.4, OpenBLAS 0.3.21" / "CUDA 13.0, NCCL 2.27.3"
  int ranks = 0;                               // ranks the collectives ran on
  // precision: the data type the GEMM kinds (matmul, conv, attention) were timed in: fp32, tf32,
  // bf16 or fp16, as a scenario's --precision. A bf16 GEMM runs 2-15x faster than an fp32 one on
  // the same GPU, so a table is only used for scenarios of its precision (sim/resolve.cpp).
  // Files of schema_version 1 have no such field: `gradsync calibrate` then always timed fp32
  // (cublasGemmEx with CUDA_R_32F, OpenBLAS sgemm), and they are read as fp32.
  std::string precision = "fp32";
  double launch_s = 0;                         // host time to issue one kernel
  std::map<OpKind, CalibrationTable> compute;  // matmul/conv/attention by FLOPs, memory by bytes
  CalibrationTable peer_copy;                  // device to device, by bytes (empty on one device)
  CalibrationTable host_copy;                  // host to device, by bytes
  std::vector<CollectiveTable> collectives;

  // compute_time: the measured time of an op of `kind` (GEMM kinds by flops, memory by bytes);
  // nullopt when the calibration has no table for it.
  std::optional<double> compute_time(OpKind kind, double flops, double bytes) const;
  // collective_time: nullopt when no table has this collective at this many ranks.
  std::optional<double> collective_time(Collective c, int members, double bytes) const;
};

// calibration_yaml: the file's text: a comment saying what made it, the hardware, the measured
// points and, for people, the fitted segments (read_calibration reads the points only).
std::string calibration_yaml(const Calibration& c);

// read_calibration: ConfigError naming file:line and the field for anything malformed (missing
// file, unknown kind or collective, sizes not increasing, a negative time).
Calibration read_calibration(const std::string& path);
// parse_calibration: the same from a file's text; `origin` names it in errors.
Calibration parse_calibration(std::string_view text, const std::string& origin);

}  // namespace gradsync
