// link_model.cpp: NCCL's link rates against the datasheets (see link_model.hpp).
#include "topologies/link_model.hpp"

#include <algorithm>
#include <cctype>

#include "core/units.hpp"

namespace gradsync {

double nccl_nvlink_Bps(int sm) {
  // NCCL v2.27.7 src/graph/topo.h: SM60_NVLINK_BW 18.0, SM70_NVLINK_BW 20.0, SM80_NVLINK_BW 20.0,
  // SM86_NVLINK_BW 12.0, SM90_NVLINK_BW 20.6, SM100_NVLINK_BW 40.1; ncclTopoNVLinkBw picks by
  // compute capability (>= 100, >= 90, == 86, >= 80, >= 70, >= 60).
  if (sm >= 100) return 40.1e9;
  if (sm >= 90) return 20.6e9;
  if (sm == 86) return 12.0e9;
  if (sm >= 80) return 20.0e9;
  if (sm >= 70) return 20.0e9;
  if (sm >= 60) return 18.0e9;
  return 20.0e9;  // NCCL's fallback: SM80_NVLINK_BW
}

double datasheet_nvlink_Bps(int sm) {
  // NVLink 1.0 (P100) 20 GB/s per link per direction; NVLink 2.0 (V100), 3.0 (A100) and 4.0 (H100)
  // 25; NVLink 3.0 on GA10x (RTX 3090, A40: 4 links, 56.25 GB/s per direction) 14.0625; NVLink 5.0
  // (B200) 50 (NVIDIA's architecture whitepapers and product briefs).
  if (sm >= 100) return 50e9;
  if (sm == 86) return 14.0625e9;
  if (sm >= 70) return 25e9;
  if (sm >= 60) return 20e9;
  return 25e9;
}

double pcie_Bps(int gen, int lanes) {
  const double x16 = parse_bandwidth(gen <= 3 ? "15.75GBps" : gen == 4 ? "31.5GBps" : "63GBps");
  return x16 * lanes / 16.0;
}

double payload_efficiency(LinkType type, int sm) {
  switch (type) {
    case LinkType::kNvlink:
      return nccl_nvlink_Bps(sm) / datasheet_nvlink_Bps(sm);
    case LinkType::kPcie:
      // NCCL: x16 Gen3 = 16 x 60 / 80 = 12 GB/s; datasheet 8 GT/s x 16 x 128/130 / 8 = 15.75 GB/s.
      return 12.0 / 15.75;
    case LinkType::kInfiniband:
    case LinkType::kEthernet:
    case LinkType::kCpuLink:
      return 1.0;
  }
  return 1.0;
}

std::optional<std::string> canonical_cpu_family(std::string_view name) {
  std::string n;
  for (char c : name) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n == "broadwell" || n == "bdw") return "broadwell";
  if (n == "skylake" || n == "skl" || n == "cascade-lake" || n == "cascadelake" || n == "clx" || n == "ice-lake" ||
      n == "icelake" || n == "icx")
    return "skylake";
  if (n == "sapphire-rapids" || n == "sapphirerapids" || n == "spr" || n == "srp" || n == "granite-rapids" ||
      n == "graniterapids" || n == "gnr")
    return "sapphire-rapids";
  if (n == "emerald-rapids" || n == "emeraldrapids" || n == "emr" || n == "erp") return "emerald-rapids";
  return std::nullopt;
}

namespace {

// intel_socket_Bps: NCCL 2.27's src/graph/topo.h figure for one Intel socket's family.
double intel_socket_Bps(const std::string& family) {
  if (family == "broadwell") return 6.0e9;         // BDW_QPI_BW
  if (family == "sapphire-rapids") return 22.0e9;  // SRP_QPI_BW
  if (family == "emerald-rapids") return 40.0e9;   // ERP_QPI_BW
  return 10.0e9;                                   // SKL_QPI_BW, and a socket of no stated family
}

}  // namespace

double nccl_inter_socket_Bps(const TopoVertex& a, const TopoVertex& b) {
  // topo.cc ncclTopoGetInterCpuBw: one figure per socket, by architecture and vendor.
  const auto socket_Bps = [](const TopoVertex& v) {
    if (v.amd()) return 16.0e9;  // AMD_BW
    if (v.arm()) return 6.0e9;   // ARM_BW
    return intel_socket_Bps(v.model);
  };
  return std::min(socket_Bps(a), socket_Bps(b));
}

double link_payload_Bps(const TopoLink& l, const TopoVertex& a, const TopoVertex& b) {
  if (l.type == LinkType::kCpuLink) return std::min(l.total_bw_Bps(), nccl_inter_socket_Bps(a, b));
  int sm = 0;
  for (const TopoVertex* v : {&a, &b})
    if (v->gpu) sm = sm == 0 ? v->gpu->sm_version : std::min(sm, v->gpu->sm_version);
  return l.total_bw_Bps() * payload_efficiency(l.type, sm);
}

}  // namespace gradsync
