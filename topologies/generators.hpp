// generators.hpp: topologies for common machines and clusters, built from GPU specifications
// and published system layouts; `gradsync topo generate` writes them as DOT.
//
//   const Topology t = generate_fat_tree({.nodes = 16, .node = "dgx-h100", .rail_optimized = true});
//   write_topology_dot(t);   // the text of topologies/16x-dgx-h100-ndr.dot
//
// Link numbers are per link and per direction, from datasheets: NVLink 25 GB/s per link
// (V100/A100/H100), PCIe 15.75/31.5/63 GB/s for Gen3/4/5 x16, InfiniBand EDR/HDR/NDR 100/200/400
// Gb/s. Latencies are typical one-way link latencies; collectives add NCCL's own latencies in
// the simulator. Each generated file opens with the command that made it and its sources.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "topologies/topology.hpp"

namespace gradsync {

// NvswitchOptions: one HGX/DGX-style node: n GPUs on one NVSwitch fabric (NCCL sees the
// switches as one NVS node; so does gradsync), PCIe switches each pairing two GPUs with the
// NICs, half the switches under each of two CPU sockets.
struct NvswitchOptions {
  std::string gpu = "a100-sxm4-80gb";
  int gpus = 8;
  std::optional<int> nics = {};    // unset: one per GPU
  std::string nic_bw = "200Gbps";  // HDR InfiniBand
};

// NvlinkMeshOptions: the DGX-1 hybrid cube-mesh of 8 V100s.
struct NvlinkMeshOptions {
  std::string gpu = "v100-sxm2-32gb";
};

// PcieOptions: a workstation or PCIe server: GPUs under PCIe switches (gpus_per_switch, 0 for
// GPUs on CPU root ports), spread over `sockets` CPUs joined by a CPU link, and optionally NVLink
// bridges joining GPU pairs (0-1, 2-3, ...).
struct PcieOptions {
  std::string gpu = "rtx-4090";
  int gpus = 4;
  int sockets = 2;
  // kAutoGpusPerSwitch: 2, or fewer where a socket holds fewer GPUs (2 GPUs over 2 sockets: 1 each).
  static constexpr int kAutoGpusPerSwitch = -1;
  int gpus_per_switch = kAutoGpusPerSwitch;
  bool nvlink_bridge = false;
  std::string cpu = "intel";  // the sockets' vendor: intel or amd
  std::string p2p = "auto";   // PCIe peer-to-peer: auto (the GPU's, gpus.yaml), on (a driver that enables it), off
};

// FatTreeOptions: `nodes` machines of type `node` (dgx-a100, dgx-h100, dgx-h200, dgx-b200, dgx1-v100)
// under leaf switches, leaves joined by spines. Leaf ports go half down, half up at
// oversubscription 1 (down = ports x R / (R + 1) in general). Rail-optimized: NIC i of every
// node goes to the leaves of rail i. When the leaves outnumber a spine's ports, a third level is
// built as in a k-ary fat-tree: pods of spine_ports / 2 leaves, each with its own spines, whose
// upper halves go to core switches (spine s of every pod to core group s); 2,048 DGX H100 nodes
// (16,384 GPUs, 64-port switches) make 16 pods of 32 leaves and 32 spines under 1,024 cores.
struct FatTreeOptions {
  int nodes = 2;
  std::string node = "dgx-a100";
  // gpus_per_node: the node's GPUs on its NVSwitch (1 to 8; the DGX-1's mesh is 8); unset: 8.
  std::optional<int> gpus_per_node = {};
  std::optional<int> nics_per_node = {};  // unset: the node type's NICs, one per GPU at most
  std::string nic_bw = {};  // empty: the node type's NIC speed (200Gbps HDR on dgx-a100, 400Gbps NDR on H100/B200)
  double oversubscription = 1;
  std::optional<int> leaf_ports = {};   // unset: the node type's switch (HDR 40, NDR 64, EDR 36 ports)
  std::optional<int> spine_ports = {};  // unset: as leaf_ports
  bool rail_optimized = false;
};

Topology generate_nvswitch(const NvswitchOptions& o);
Topology generate_nvlink_mesh(const NvlinkMeshOptions& o);
Topology generate_pcie(const PcieOptions& o);
Topology generate_fat_tree(const FatTreeOptions& o);

// cluster_node_types lists the `node` values fat-tree accepts.
std::vector<std::string> cluster_node_types();

}  // namespace gradsync
