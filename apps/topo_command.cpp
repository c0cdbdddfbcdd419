// topo_command.cpp: `gradsync topo validate|show|generate|export`: clusters as gradsync (and
// NCCL) see them: GPUs per host, links, path classes, bottlenecks, rings, trees, bisection.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "apps/cli.hpp"
#include "apps/topo_output.hpp"
#include "core/error.hpp"
#include "core/json_text.hpp"
#include "core/text.hpp"
#include "core/units.hpp"
#include "reports/table.hpp"
#include "topologies/bisection.hpp"
#include "topologies/channels.hpp"
#include "topologies/link_model.hpp"
#include "topologies/routes.hpp"
#include "topologies/topology.hpp"

namespace gradsync::apps {
namespace {

// kMatrixTextMax / kMatrixJsonMax: the most GPUs for which the GPU x GPU matrices are printed
// as text / written in JSON (1024 GPUs would be a million cells).
constexpr int kMatrixTextMax = 16;
constexpr int kMatrixJsonMax = 256;
constexpr int kRingTextMax = 32;
// kFallbackNote: what NCCL's search did when no ring fit the links at any speed it tries.
constexpr const char* kFallbackNote =
    "no ring fits the links at any speed NCCL's search tries (search.cc speedArrayIntra down to 3 GB/s "
    "per channel): NCCL falls back to one channel in simple order at 0.1 GB/s, as gradsync does "
    "(NCCL INFO \"Could not find a path for pattern 4, falling back to simple order\")";

// gb formats bytes/s as GB/s: four significant digits, whole numbers from 1000 GB/s up.
std::string gb(double bps) {
  const double v = bps / 1e9;
  return v >= 1000 ? fmt::format("{:.0f}", v) : fmt::format("{:.4g}", v);
}

std::string ranks_text(const std::vector<int>& r) { return fmt::format("{}", fmt::join(r, " ")); }

// gpu_summary: "8 GPUs on 1 host (a100-sxm4-80gb x8)".
std::string gpu_summary(const Topology& t) {
  std::map<std::string, int> models;
  for (VertexId g : t.gpus()) ++models[t.vertex(g).gpu->key];
  std::vector<std::string> parts;
  for (const auto& [m, n] : models) parts.push_back(fmt::format("{} x{}", m, n));
  return fmt::format("{} GPU{} on {} host{} ({})", t.gpu_count(), t.gpu_count() == 1 ? "" : "s", t.hosts().size(),
                     t.hosts().size() == 1 ? "" : "s", fmt::join(parts, ", "));
}

struct LinkTypeSummary {
  int count = 0;
  int links = 0;
  double total_Bps = 0;          // datasheet
  double payload_Bps = 0;        // NCCL's rate (topologies/link_model.hpp)
  std::map<double, int> speeds;  // bw per link -> number of links at it
};

std::map<LinkType, LinkTypeSummary> links_by_type(const Topology& t) {
  std::map<LinkType, LinkTypeSummary> out;
  for (LinkId e : t.links()) {
    const TopoLink& l = t.link(e);
    LinkTypeSummary& s = out[l.type];
    ++s.count;
    s.links += l.links;
    s.total_Bps += l.total_bw_Bps();
    s.payload_Bps += l.payload_bw_Bps;
    s.speeds[l.bw_Bps] += l.links;
  }
  return out;
}

void validate(const std::string& file, std::ostream& out) {
  const Topology t = load_topology(file);
  Routes routes(t);
  check_host_memory(routes);
  const Channels ch = build_channels(t, routes, first_ranks(t.gpu_count()));
  // One GPU: no ring to describe (NCCL builds none).
  const std::string rings =
      ch.rings.empty()
          ? std::string("no ring (one GPU)")
          : fmt::format("{} of {} GB/s{}", counted(static_cast<long long>(ch.rings.size()), "ring channel"),
                        gb(ch.channel_bw_Bps),
                        ch.fallback ? " (NCCL's fallback: no ring fits the links at any speed its search tries)" : "");
  // The file's name as errors write it: a control character in it (an escape sequence) is shown,
  // not sent to the terminal.
  out << printable_message(fmt::format("{}: OK: {}, {}, {}; {}", file, gpu_summary(t),
                                       counted(t.vertex_count(), "node"),
                                       counted(static_cast<long long>(t.links().size()), "link"), rings))
      << "\n";
}

void show(const std::string& file, bool json, std::ostream& out) {
  const Topology t = load_topology(file);
  Routes routes(t);
  const int n = t.gpu_count();
  const std::vector<int> all = first_ranks(n);
  const Channels ch = build_channels(t, routes, all);
  const auto by_type = links_by_type(t);
  const bool matrix = n <= (json ? kMatrixJsonMax : kMatrixTextMax);
  std::vector<std::vector<Route>> pairs;
  if (matrix) {
    pairs.resize(static_cast<std::size_t>(n));
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b) pairs[static_cast<std::size_t>(a)].push_back(routes.gpu_route(a, b));
  }
  const std::optional<Bisection> bis = n >= 2 ? std::optional<Bisection>(bisection(t, all)) : std::nullopt;

  if (json) {
    nlohmann::ordered_json j;
    j["origin"] = t.origin();
    j["comment"] = t.comment();
    auto& gpus = j["gpus"] = nlohmann::ordered_json::array();
    for (int r = 0; r < n; ++r) {
      const TopoVertex& v = t.vertex(t.gpu(r));
      gpus.push_back({{"rank", r}, {"name", v.name}, {"host", v.host}, {"model", v.gpu->key}});
    }
    auto& hosts = j["hosts"] = nlohmann::ordered_json::array();
    for (std::size_t h = 0; h < t.hosts().size(); ++h) {
      std::vector<int> ranks;
      for (int r = 0; r < n; ++r)
        if (t.host_of(r) == static_cast<int>(h)) ranks.push_back(r);
      hosts.push_back({{"name", t.hosts()[h]}, {"gpus", ranks}, {"nics", t.nics_of_host(static_cast<int>(h)).size()}});
    }
    auto& links = j["links_by_type"] = nlohmann::ordered_json::array();
    for (const auto& [type, s] : by_type) {
      links.push_back({{"type", to_string(type)},
                       {"edges", s.count},
                       {"links", s.links},
                       {"total_bw_Bps", s.total_Bps},
                       {"payload_bw_Bps", s.payload_Bps}});
    }
    if (matrix) {
      auto& cls = j["path_class"] = nlohmann::ordered_json::array();
      auto& bw = j["bottleneck_bw_Bps"] = nlohmann::ordered_json::array();
      for (int a = 0; a < n; ++a) {
        auto crow = nlohmann::ordered_json::array();
        auto brow = nlohmann::ordered_json::array();
        for (int b = 0; b < n; ++b) {
          const Route& r = pairs[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)];
          crow.push_back(a == b ? "X" : std::string(to_string(r.path_class)));
          if (a == b) {
            brow.push_back(nullptr);
          } else {
            brow.push_back(r.bottleneck_Bps);
          }
        }
        cls.push_back(crow);
        bw.push_back(brow);
      }
    } else {
      j["path_class"] = nullptr;
      j["bottleneck_bw_Bps"] = nullptr;
      j["matrix_omitted"] = fmt::format("more than {} GPUs", kMatrixJsonMax);
    }
    auto& rings = j["rings"];
    rings["channels"] = ch.rings.size();
    rings["channel_bw_Bps"] = ch.channel_bw_Bps;
    rings["total_bw_Bps"] = ch.total_bw_Bps();
    rings["intra_node_class"] = to_string(ch.intra_class);
    rings["fallback"] = ch.fallback;
    auto& orders = rings["orders"] = nlohmann::ordered_json::array();
    for (const RingChannel& r : ch.rings) {
      nlohmann::ordered_json o{{"order", r.order}};
      if (!r.nics.empty()) {
        std::vector<std::string> nics;
        for (VertexId v : r.nics) nics.push_back(t.vertex(v).name);
        o["nics"] = nics;
      }
      orders.push_back(o);
    }
    auto& trees = j["trees"] = nlohmann::ordered_json::array();
    for (int k = 0; k < 2 && !ch.trees[0].empty(); ++k) {
      std::vector<int> parent;
      for (const TreeNode& tn : ch.trees[static_cast<std::size_t>(k)]) parent.push_back(tn.parent);
      trees.push_back({{"tree", k}, {"over", "hosts"}, {"parent", parent}});
    }
    if (bis) {
      j["bisection"] = {{"half_a", bis->half_a}, {"half_b", bis->half_b}, {"bw_Bps", bis->bw_Bps}};
    } else {
      j["bisection"] = nullptr;
    }
    out << json_text(j, 2) << '\n';
    return;
  }

  out << fmt::format("# gradsync topo show {}\n", file);
  std::istringstream comment(t.comment());
  for (std::string line; std::getline(comment, line);) out << "# " << line << '\n';
  out << fmt::format("#\n# {}, {}, {}\n", gpu_summary(t), counted(t.vertex_count(), "node"),
                     counted(static_cast<long long>(t.links().size()), "link"));

  reports::Table hosts({{"host", "", true}, {"gpus", ""}, {"nics", ""}, {"ranks", "", true}});
  for (std::size_t h = 0; h < t.hosts().size(); ++h) {
    std::vector<int> ranks;
    for (int r = 0; r < n; ++r)
      if (t.host_of(r) == static_cast<int>(h)) ranks.push_back(r);
    hosts.add_row({t.hosts()[h], std::to_string(ranks.size()),
                   std::to_string(t.nics_of_host(static_cast<int>(h)).size()),
                   ranks.size() <= 16 ? ranks_text(ranks) : fmt::format("{}-{}", ranks.front(), ranks.back())});
  }
  out << "#\n";
  hosts.print(out, {"GPUs per host"});

  reports::Table links({{"type", "", true},
                        {"edges", ""},
                        {"links", ""},
                        {"bw/link", "GB/s", true},
                        {"total", "GB/s"},
                        {"payload", "GB/s"}});
  for (const auto& [type, s] : by_type) {
    std::vector<std::string> speeds;
    for (const auto& [bw, count] : s.speeds) speeds.push_back(fmt::format("{} x{}", gb(bw), count));
    links.add_row({std::string(to_string(type)), std::to_string(s.count), std::to_string(s.links),
                   fmt::format("{}", fmt::join(speeds, ", ")), gb(s.total_Bps), gb(s.payload_Bps)});
  }
  out << "#\n";
  links.print(out, {"Links by type (bandwidth per direction): datasheet total, and the payload NCCL moves over it",
                    fmt::format("(NVLink 20 of 25 GB/s per link on V100/A100, 20.6 on H100; PCIe x16 12/24/48 GB/s for "
                                "Gen3/4/5; NIC line rate; {})",
                                kLinkModelVersion)});

  out << "#\n";
  if (matrix) {
    const auto print_matrix = [&](const std::string& title, auto cell) {
      out << "# " << title << '\n';
      std::string head = fmt::format("# {:>6}", "");
      for (int b = 0; b < n; ++b) head += fmt::format(" {:>6}", b);
      out << head << '\n';
      for (int a = 0; a < n; ++a) {
        std::string row = fmt::format("  {:>6}", a);
        for (int b = 0; b < n; ++b)
          row += fmt::format(" {:>6}",
                             a == b ? "X" : cell(pairs[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)]));
        out << row << '\n';
      }
    };
    print_matrix("GPU x GPU path class (NCCL: NVL NVB PIX PXB PHB SYS NET), like nvidia-smi topo -m",
                 [](const Route& r) { return std::string(to_string(r.path_class)); });
    out << "#\n";
    print_matrix("GPU x GPU bottleneck payload bandwidth, GB/s per direction",
                 [](const Route& r) { return gb(r.bottleneck_Bps); });
  } else {
    out << fmt::format("# GPU x GPU matrices: {} GPUs, more than {}; 'gradsync topo show --json' has them up to {}\n",
                       n, kMatrixTextMax, kMatrixJsonMax);
  }

  out << "#\n";
  if (ch.rings.empty()) {
    out << "# Rings: none (one GPU)\n";
  } else {
    // One GPU per host: every hop crosses the network, none is inside a node.
    bool inside = false;
    for (const RingChannel& r : ch.rings)
      for (const Hop& h : r.hops) inside = inside || h.kind != TransportKind::kNet;
    out << fmt::format("# Rings: {} channel{} x {} GB/s = {} GB/s per direction; worst hop inside a node: {}\n",
                       ch.rings.size(), ch.rings.size() == 1 ? "" : "s", gb(ch.channel_bw_Bps), gb(ch.total_bw_Bps()),
                       inside ? std::string(to_string(ch.intra_class)) : std::string("none (one GPU per node)"));
    if (ch.fallback) out << "# " << kFallbackNote << '\n';
    for (std::size_t c = 0; c < ch.rings.size(); ++c) {
      const RingChannel& r = ch.rings[c];
      std::vector<std::string> nics;
      for (std::size_t k = 0; k < r.nics.size() && k < 2; ++k) nics.push_back(t.vertex(r.nics[k]).name);
      const std::string via = r.nics.empty()       ? ""
                              : r.nics.size() <= 2 ? fmt::format(" (NICs {})", fmt::join(nics, ", "))
                                                   : fmt::format(" (NICs {}, ... one per host)", fmt::join(nics, ", "));
      if (n <= kRingTextMax) {
        out << fmt::format("#   ring {:>2}: {}{}\n", c, ranks_text(r.order), via);
      } else if (r.chains.size() <= 1) {
        // One host (an NVL72 rack, a big PCIe box): its ring's first GPUs, then the count.
        const std::vector<int> head(r.order.begin(),
                                    r.order.begin() + std::min<std::ptrdiff_t>(16, std::ssize(r.order)));
        out << fmt::format("#   ring {:>2}: {} ... ({} GPUs){}\n", c, ranks_text(head), r.order.size(), via);
      } else {
        out << fmt::format("#   ring {:>2}: host {} chain {} ... then every host in order{}\n", c,
                           t.hosts()[static_cast<std::size_t>(ch.hosts.front())], ranks_text(r.chains.front()), via);
      }
    }
  }
  if (!ch.trees[0].empty()) {
    out << fmt::format(
        "# Trees: NCCL double binary tree over {} hosts (channel c uses tree c mod 2), a chain inside "
        "each host; {} GB/s per channel\n",
        ch.hosts.size(), gb(ch.channel_bw_Bps));
    for (int k = 0; k < 2; ++k) {
      std::vector<std::string> edges;
      const auto& tree = ch.trees[static_cast<std::size_t>(k)];
      for (std::size_t h = 0; h < tree.size() && edges.size() < 16; ++h) {
        if (tree[h].parent >= 0) edges.push_back(fmt::format("{}->{}", h, tree[h].parent));
      }
      std::size_t root = 0;
      while (root < tree.size() && tree[root].parent >= 0) ++root;
      out << fmt::format("#   tree {}: root host {}; child->parent {}{}\n", k, root, fmt::join(edges, " "),
                         tree.size() > 17 ? " ..." : "");
    }
  }
  if (bis) {
    const auto half = [&](const std::vector<int>& h) {
      return h.size() <= 8 ? ranks_text(h) : fmt::format("{} GPUs", h.size());
    };
    // The split is by hosts where there are several (bisection.hpp): an odd host count splits unevenly.
    const bool uneven = bis->half_a.size() != bis->half_b.size();
    out << fmt::format("# Bisection (estimate): GPUs [{}] -> [{}]: {} GB/s per direction{}\n", half(bis->half_a),
                       half(bis->half_b), gb(bis->bw_Bps),
                       uneven ? " (the first half of the hosts against the rest: an odd host count splits the GPUs "
                                "unevenly)"
                              : "");
  }
}

}  // namespace

void register_topo_command(CLI::App& app) {
  CLI::App* topo = app.add_subcommand("topo", "Clusters: validate, show, generate and export topology files");
  topo->require_subcommand(1);
  const std::string file_help =
      fmt::format("Topology file (.dot, .graphml) or built-in name: {}", fmt::join(builtin_topology_names(), ", "));

  auto file = std::make_shared<std::string>();
  CLI::App* val = topo->add_subcommand("validate", "Check a topology file; exit 1 with the first problem found");
  val->add_option("file", *file, file_help)->required();
  val->callback([file] { validate(*file, std::cout); });

  auto show_file = std::make_shared<std::string>();
  auto show_json = std::make_shared<bool>(false);
  CLI::App* sh =
      topo->add_subcommand("show", "GPUs per host, links, path classes, bottlenecks, rings, trees, bisection");
  sh->add_option("file", *show_file, file_help)->required();
  sh->add_flag("--json", *show_json, "Print JSON instead of tables");
  sh->callback([show_file, show_json] { show(*show_file, *show_json, std::cout); });

  auto ex_file = std::make_shared<std::string>();
  auto ex_format = std::make_shared<std::string>();
  auto ex_out = std::make_shared<std::string>();
  CLI::App* ex = topo->add_subcommand(
      "export",
      "Write a topology as DOT or GraphML (reading it back gives the same cluster; the opening comment survives, "
      "but GraphML's XML comments cannot hold \"--\", written \"- -\")");
  ex->add_option("file", *ex_file, file_help)->required();
  ex->add_option("--format", *ex_format, "dot or graphml")
      ->required()
      ->transform(CLI::IsMember({"dot", "graphml"}, CLI::ignore_case));
  ex->add_option("-o,--out", *ex_out, "Output file (default: stdout)")->check(kNonEmptyPath);
  ex->callback([ex_file, ex_format, ex_out] {
    if (!ex_out->empty()) {
      // The file read back must be the one written: not the input itself, and named by the
      // extension the reader takes the format from (load_topology: .dot/.gv, .graphml/.xml).
      std::error_code same;
      if (std::filesystem::equivalent(*ex_out, *ex_file, same))
        throw UsageError(fmt::format("--out {}: is the topology being read; give the export another name", *ex_out));
      check_out_name(*ex_out, ascii_lower(*ex_format));
    }
    const Topology t = load_topology(*ex_file);
    emit(*ex_format == "dot" ? write_topology_dot(t) : write_topology_graphml(t), *ex_out, std::cout);
  });

  register_topo_generate(topo);
}

}  // namespace gradsync::apps
