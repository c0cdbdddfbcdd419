// topo_generate_command.cpp: `gradsync topo generate nvswitch|nvlink-mesh|pcie|fat-tree`, and the
// output rules `topo export` shares (topo_output.hpp).
#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "apps/cli.hpp"
#include "apps/topo_output.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "topologies/generators.hpp"
#include "topologies/topology.hpp"

namespace gradsync::apps {

// check_out_name: a file written for `format` ("dot" or "graphml") must carry an extension the
// reader takes that format from (load_topology: .dot/.gv, .graphml/.xml), or gradsync could not
// read back what it wrote (a new user's report: `topo generate pcie -o run.yaml` replaced a
// scenario file with DOT that `topo validate run.yaml` then refused).
void check_out_name(const std::string& path, const std::string& format) {
  if (path.empty() || path == "-") return;
  const std::string ext = ascii_lower(std::filesystem::path(path).extension().string());
  const bool dot_name = ext == ".dot" || ext == ".gv", graphml_name = ext == ".graphml" || ext == ".xml";
  if ((format == "dot" && dot_name) || (format == "graphml" && graphml_name)) return;
  throw UsageError(fmt::format(
      "--out {}: {} for {}; expected {} (gradsync reads a topology file by its extension)", path,
      ext.empty() ? std::string("a name without an extension") : fmt::format("a {} name", ext),
      format == "dot" ? "DOT" : "GraphML", format == "dot" ? "a .dot or .gv name" : "a .graphml or .xml name"));
}

void emit(const std::string& text, const std::string& path, std::ostream& out) {
  if (path.empty() || path == "-") {
    out << text;
    return;
  }
  write_file_atomic(path, text);
}

namespace {

// as_usage runs a generator, reporting its option errors as usage errors.
template <typename F>
Topology as_usage(F f) {
  try {
    return f();
  } catch (const ConfigError& e) {
    throw UsageError(e.what());
  }
}

}  // namespace

void register_topo_generate(CLI::App* topo) {
  CLI::App* gen = topo->add_subcommand("generate", "Write a generated topology as DOT");
  gen->require_subcommand(1);
  auto out = std::make_shared<std::string>();
  const auto add_out = [&](CLI::App* sub) {
    sub->add_option("-o,--out", *out, "Output file (default: stdout)")->check(kNonEmptyPath);
  };

  auto nv = std::make_shared<NvswitchOptions>();
  CLI::App* nvs = gen->add_subcommand("nvswitch", "n GPUs on an NVSwitch fabric (DGX/HGX A100, H100 style)");
  nvs->ignore_case();  // a generator's name is a word like any other (README, "Flags")
  nvs->add_option("--gpu", nv->gpu, "GPU key or alias (gpus.yaml); needs NVLink")->capture_default_str();
  nvs->add_option("--gpus", nv->gpus, "Number of GPUs")->capture_default_str();
  nvs->add_option("--nics", nv->nics, "Number of NICs, 0 to 64 (default: one per GPU, at most 64)");
  nvs->add_option("--nic-bw", nv->nic_bw, "Bandwidth of each NIC")->capture_default_str();
  add_out(nvs);
  nvs->callback([nv, out] {
    check_out_name(*out, "dot");
    emit(write_topology_dot(as_usage([&] { return generate_nvswitch(*nv); })), *out, std::cout);
  });

  auto mesh = std::make_shared<NvlinkMeshOptions>();
  CLI::App* ms = gen->add_subcommand("nvlink-mesh", "The DGX-1 V100 hybrid cube-mesh");
  ms->ignore_case();
  ms->add_option("--gpu", mesh->gpu, "GPU key or alias (6 NVLinks)")->capture_default_str();
  add_out(ms);
  ms->callback([mesh, out] {
    check_out_name(*out, "dot");
    emit(write_topology_dot(as_usage([&] { return generate_nvlink_mesh(*mesh); })), *out, std::cout);
  });

  auto pc = std::make_shared<PcieOptions>();
  CLI::App* pcie = gen->add_subcommand("pcie", "GPUs under PCIe switches and CPU sockets, optional NVLink bridges");
  pcie->ignore_case();
  pcie->add_option("--gpu", pc->gpu, "GPU key or alias")->capture_default_str();
  pcie->add_option("--gpus", pc->gpus, "Number of GPUs")->capture_default_str();
  pcie->add_option("--sockets", pc->sockets, "CPU sockets (1 or 2)")->capture_default_str();
  pcie->add_option("--gpus-per-switch", pc->gpus_per_switch,
                   "GPUs per PCIe switch, 0: on CPU root ports (default: 2, or fewer where a socket holds fewer)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            int v = -1;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < 0 || v > 16)
              return fmt::format("value \"{}\" must be an integer from 0 (CPU root ports) to 16", text);
            return "";
          },
          ""));
  pcie->add_flag("--nvlink-bridge", pc->nvlink_bridge, "NVLink bridges joining GPU pairs");
  pcie->add_option(
          "--cpu", pc->cpu,
          "CPU: intel, amd (NCCL treats them apart), or an Intel Xeon family, which sets NCCL's socket-to-"
          "socket figure: broadwell (6 GB/s), skylake (10, as intel), sapphire-rapids (22), emerald-rapids (40)")
      ->transform(kAnyCase)
      ->capture_default_str();
  pcie->add_option(
          "--p2p", pc->p2p,
          "PCIe peer-to-peer: auto (the GPU's: GeForce boards have none), on (a driver that enables it) or off")
      ->transform(kAnyCase)
      ->capture_default_str();
  add_out(pcie);
  pcie->callback([pc, out] {
    check_out_name(*out, "dot");
    emit(write_topology_dot(as_usage([&] { return generate_pcie(*pc); })), *out, std::cout);
  });

  for (const bool rail : {false, true}) {
    auto ft = std::make_shared<FatTreeOptions>();
    ft->rail_optimized = rail;
    CLI::App* f = gen->add_subcommand(rail ? "rail-optimized" : "fat-tree",
                                      rail ? "Nodes on a rail-optimized fat-tree (NIC i of every node on rail i)"
                                           : "Nodes under leaf switches joined by spines");
    f->ignore_case();
    f->add_option("--nodes", ft->nodes, "Number of nodes")->required();
    f->add_option("--node", ft->node, fmt::format("Node type: {}", fmt::join(cluster_node_types(), ", ")))
        ->transform(kAnyCase)
        ->required();
    f->add_option("--gpus-per-node", ft->gpus_per_node,
                  "GPUs per node on its NVSwitch, 1 to 8: a node per GPU for a scaling study (default: 8; the "
                  "dgx1-v100 mesh is 8)");
    f->add_option("--nics-per-node", ft->nics_per_node,
                  "Compute NICs per node (default: the node type's, one per GPU at most)");
    f->add_option("--nic-bw", ft->nic_bw, "Speed of each NIC, e.g. 100Gbps (default: the node type's)");
    f->add_option("--oversubscription", ft->oversubscription, "Leaf down:up bandwidth ratio R (R:1)")
        ->capture_default_str();
    f->add_option("--leaf-ports", ft->leaf_ports, "Ports per leaf switch (default: the node type's switch)");
    f->add_option("--spine-ports", ft->spine_ports,
                  "Ports per spine (and core) switch; when the leaves outnumber them, pods of half as many leaves "
                  "under core switches make a third level (default: as leaf)");
    add_out(f);
    f->callback([ft, out] {
      check_out_name(*out, "dot");
      emit(write_topology_dot(as_usage([&] { return generate_fat_tree(*ft); })), *out, std::cout);
    });
  }
}

}  // namespace gradsync::apps
