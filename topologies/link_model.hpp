// link_model.hpp: what a byte costs on each kind of link: the payload rate NCCL plans with and
// reaches, as a fraction of the datasheet rate a topology file gives. One versioned table, each
// number with its source in NCCL's code (src/graph/topo.h, topo.cc: NVIDIA/nccl v2.27.7).
//
// Topology files keep datasheet rates (NVLink 25 GB/s per link, PCIe Gen4 x16 31.5 GB/s, HDR
// 25 GB/s); Topology::build sets each link's payload_bw_Bps = datasheet x payload_efficiency.
// The channel search, the routes' bottlenecks and the simulated links all use the payload rate,
// so an uncontended collective takes the time NCCL's own model predicts, and contention between
// flows still comes from SimGrid's sharing of these rates.
//
//   payload_efficiency(LinkType::kNvlink, 80)  == 0.8     // A100: 20 of 25 GB/s per link
//   payload_efficiency(LinkType::kPcie, 0)     == 12/15.75 // Gen3 x16: NCCL's 12 GB/s
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "topologies/topology.hpp"

namespace gradsync {

// kLinkModelVersion: the NCCL release whose link constants the table holds.
inline constexpr std::string_view kLinkModelVersion = "NCCL 2.27.7 src/graph/topo.h";

// nccl_nvlink_Bps: NCCL's bandwidth of one NVLink, per direction, for a GPU of compute capability
// `sm` (x10): SM60_NVLINK_BW 18, SM70/SM80 20, SM86 12, SM90 20.6, SM100 40.1 GB/s
// (ncclTopoNVLinkBw). About 80% of the datasheet rate: NVLink carries at most 128 B of payload per
// packet from the SMs ("roughly, the app-level bandwidth is 80% of the peak bandwidth", NCCL's
// maintainer in NVIDIA/nccl#1054).
double nccl_nvlink_Bps(int sm);
// datasheet_nvlink_Bps: the datasheet rate of one NVLink per direction for that generation:
// NVLink1 20, NVLink2/3/4 25 (NVLink3 on GA10x: 14.0625), NVLink5 50 GB/s.
double datasheet_nvlink_Bps(int sm);

// pcie_Bps: PCIe's datasheet bandwidth per direction for a generation at x16 (8, 16, 32 GT/s for
// Gen3-5 with 128b/130b encoding: 15.75, 31.5, 63 GB/s), scaled for narrower links.
double pcie_Bps(int gen, int lanes);

// payload_efficiency: payload rate over datasheet rate for a link of `type` whose GPU end (or the
// slower of two GPU ends) has compute capability `sm` (0 when no GPU is at either end):
//   nvlink      nccl_nvlink_Bps(sm) / datasheet_nvlink_Bps(sm)
//   pcie        12 / 15.75: NCCL counts a PCIe link as width x speed / 80 GB/s with speed 60, 120,
//               240 (x100 Mb/s per lane) for Gen3/4/5 (topo.cc kvDictPciGen), i.e. 12, 24, 48 GB/s
//               per x16 against the datasheet's 15.75, 31.5, 63 (8/16/32 GT/s, 128b/130b): TLP
//               headers, DLLPs and flow-control credits
//   infiniband, ethernet   1: NCCL takes a NIC's line rate (speed / 8000, topo.cc) as it is
//   cpu_link    1: NCCL's inter-socket figures are per CPU family (BDW 6, SKL 10, SRP 22, ERP 40,
//               AMD 16 GB/s, topo.h), the cpu's "model" attribute naming an Intel family; the
//               link's rate is at most that figure (nccl_inter_socket_Bps)
double payload_efficiency(LinkType type, int sm);

// kCpuFamilyNames: the Intel Xeon families a cpu's "model" attribute names, as NCCL tells them
// apart by CPU model number (topo.cc: model 0xCF and up ERP, 0x8F SRP, 0x55 SKL, older BDW).
inline constexpr const char* kCpuFamilyNames =
    "broadwell, skylake (also cascade-lake, ice-lake), sapphire-rapids (also granite-rapids), emerald-rapids";
// canonical_cpu_family: "skylake" for "Skylake", "cascade-lake" or "skl"; nullopt for a name that
// is none of them.
std::optional<std::string> canonical_cpu_family(std::string_view name);
// nccl_inter_socket_Bps: NCCL's figure for the link between two sockets (topo.h, NCCL 2.26 on),
// the lower of the two sockets' figures: AMD_BW 16 GB/s, ARM_BW 6 GB/s; for Intel the family's,
// BDW_QPI_BW 6, SKL_QPI_BW 10, SRP_QPI_BW 22, ERP_QPI_BW 40, a socket of no stated family
// taken as Skylake-class (10: what NCCL before 2.26 gave every Xeon Scalable).
double nccl_inter_socket_Bps(const TopoVertex& a, const TopoVertex& b);

// link_payload_Bps: the payload rate of one link (all its parallel links) between `a` and `b`, per
// direction: its datasheet total times payload_efficiency; a cpu_link at most NCCL's figure for
// its sockets' vendor.
double link_payload_Bps(const TopoLink& l, const TopoVertex& a, const TopoVertex& b);

}  // namespace gradsync
