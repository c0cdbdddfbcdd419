// list_command.cpp: `gradsync list gpus|clusters|models`: what gradsync has built in, one row
// each, with the facts that decide a scenario.
#include <fmt/format.h>

#include <iostream>
#include <set>

#include "apps/cli.hpp"
#include "core/units.hpp"
#include "reports/table.hpp"
#include "topologies/gpu_spec.hpp"
#include "topologies/topology.hpp"

namespace gradsync::apps {
namespace {

std::string tflops(std::optional<double> f) { return f ? fmt::format("{:.1f}", *f / 1e12) : "-"; }

void list_gpus(std::ostream& out) {
  reports::Table t({{"gpu", "", true},
                    {"sms", ""},
                    {"memory", "GiB"},
                    {"hbm", "GB/s"},
                    {"fp32", "TFLOP/s"},
                    {"tf32", "TFLOP/s"},
                    {"bf16", "TFLOP/s"},
                    {"fp16", "TFLOP/s"},
                    {"nvlink", "GB/s"},
                    {"pcie", ""},
                    {"name", "", true}});
  for (const GpuSpec& g : gpu_specs()) {
    t.add_row({g.key, std::to_string(g.sms), fmt::format("{:.0f}", static_cast<double>(g.memory_bytes) / (1ull << 30)),
               // TF32 tensor cores came with Ampere (8.0): before, tf32 runs as fp32 ("-", as bf16).
               fmt::format("{:.0f}", g.memory_bandwidth_Bps / 1e9), tflops(g.fp32_flops),
               g.sm_version >= 80 ? tflops(g.tf32_flops) : std::string("-"), tflops(g.bf16_flops), tflops(g.fp16_flops),
               g.nvlink_links > 0 ? fmt::format("{} x {:.0f}{}", g.nvlink_links, g.nvlink_bw_Bps / 1e9,
                                                g.nvlink_bridge ? " bridge" : "")
                                  : "-",
               fmt::format("gen{} x{}{}", g.pcie_gen, g.pcie_lanes, g.pcie_p2p ? "" : ", no P2P"), g.name});
  }
  t.print(out, {"gradsync list gpus: topologies/hardware/gpus.yaml (dense peaks; nvlink: links x GB/s per direction, "
                "bridge: to one other board); "
                "--gpu and topology files take the key or an alias"});
}

void list_clusters(std::ostream& out) {
  reports::Table t({{"cluster", "", true}, {"hosts", ""}, {"gpus", ""}, {"gpu", "", true}, {"nics", ""}});
  for (const std::string& name : builtin_topology_names()) {
    const Topology topo = load_topology(name);
    std::set<std::string> models;
    for (int r = 0; r < topo.gpu_count(); ++r) models.insert(gpu_spec(topo.vertex(topo.gpu(r)).model).key);
    int nics = 0;
    for (std::size_t v = 0; v < topo.vertex_count(); ++v)
      if (topo.vertex(v).kind == VertexKind::kNic) ++nics;
    t.add_row({name, std::to_string(topo.hosts().size()), std::to_string(topo.gpu_count()),
               fmt::format("{}", fmt::join(models, ", ")), std::to_string(nics)});
  }
  t.print(out, {"gradsync list clusters: the built-in topologies (--topology NAME; 'gradsync topo show NAME' for "
                "links, rings and bisection; 'gradsync topo generate' for others)"});
}

}  // namespace

void register_list_command(CLI::App& app) {
  CLI::App* list = app.add_subcommand("list", "What is built in: gpus, clusters or models, one row each");
  list->require_subcommand(1);
  list->add_subcommand("gpus", "GPUs of topologies/hardware/gpus.yaml: SMs, memory, peaks, links")->callback([] {
    list_gpus(std::cout);
  });
  list->add_subcommand("clusters", "Built-in topologies: hosts, GPUs, GPU type, NICs")->callback([] {
    list_clusters(std::cout);
  });
  list->add_subcommand("models", "The model zoo (as 'gradsync models list')")->callback([] {
    print_model_list(std::cout);
  });
}

}  // namespace gradsync::apps
