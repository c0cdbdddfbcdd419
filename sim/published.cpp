// published.cpp: the published nccl-tests table: reading it, building each case's cluster,
// simulating it.
#include "sim/published.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "core/error.hpp"
#include "core/nccl_release.hpp"
#include "core/scenario_keys.hpp"
#include "core/units.hpp"
#include "core/yaml_reader.hpp"
#include "sim/nccl_options.hpp"
#include "sim/published_table.hpp"
#include "sim/simulate.hpp"
#include "topologies/channels.hpp"
#include "topologies/generators.hpp"
#include "topologies/routes.hpp"

namespace gradsync::sim {

namespace {

using json = nlohmann::ordered_json;

json json_of(const YAML::Node& n) {
  if (n.IsMap()) {
    json j = json::object();
    for (const auto& kv : n) j[kv.first.as<std::string>()] = json_of(kv.second);
    return j;
  }
  if (n.IsSequence()) {
    json j = json::array();
    for (const auto& v : n) j.push_back(json_of(v));
    return j;
  }
  return n.IsScalar() ? json(n.Scalar()) : json(nullptr);
}

std::string text_of(const json& spec, const char* key, const std::string& fallback) {
  return spec.contains(key) ? spec[key].get<std::string>() : fallback;
}

int int_of(const json& spec, const char* key, int fallback, const PublishedCase& c) {
  if (!spec.contains(key)) return fallback;
  const std::string t = spec[key].get<std::string>();
  try {
    std::size_t used = 0;
    const int v = std::stoi(t, &used);
    if (used == t.size()) return v;
  } catch (const std::exception&) {
  }
  throw ConfigError(fmt::format("case {}: simulate.{} \"{}\": expected an integer", c.id, key, t));
}

}  // namespace

std::string_view builtin_published_text() { return builtin_table_text("nccl_tests.yaml"); }

static std::vector<PublishedCase> read_published_unchecked(std::string_view text, const std::string& origin);

// Every error of the file's content is a DataError (exit 1), whoever named the file.
std::vector<PublishedCase> read_published(std::string_view text, const std::string& origin) {
  return as_data_error([&] { return read_published_unchecked(text, origin); });
}

static std::vector<PublishedCase> read_published_unchecked(std::string_view text, const std::string& origin) {
  const YamlReader r(origin);
  const YAML::Node cases = table_cases(r, r.load(text), "published", "gradsync-published-nccl-tests/1");
  std::vector<PublishedCase> out;
  std::set<std::string> ids;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const YAML::Node n = cases[i];
    const CaseHeader h = case_header(r, n, i, {"id",         "split", "source",        "source_note",  "hardware",
                                               "gpu",        "nodes", "gpus_per_node", "interconnect", "nccl_version",
                                               "collective", "algo",  "proto",         "env",          "placement",
                                               "busbw_GBps", "quote", "simulate",      "unsupported",  "excluded",
                                               "gpus_per_thread"},
                                     ids);
    const std::string& at = h.at;
    PublishedCase c;
    c.line = h.line;
    c.id = h.id;
    c.split = h.split;
    c.source = h.source;
    c.hardware = r.string(r.required(n, at, "hardware"), at, "hardware");
    c.nccl_version = r.string(r.required(n, at, "nccl_version"), at, "nccl_version");
    const std::string coll = r.string(r.required(n, at, "collective"), at, "collective");
    const auto parsed = parse_collective(coll);
    if (!parsed) {
      r.fail(n["collective"], at,
             fmt::format("collective \"{}\": expected allreduce, allgather, reducescatter, broadcast or reduce", coll));
    }
    c.collective = *parsed;
    c.algo = r.string(r.required(n, at, "algo"), at, "algo");
    c.nodes = static_cast<int>(r.positive_int(r.required(n, at, "nodes"), at, "nodes"));
    c.gpus_per_node = static_cast<int>(r.positive_int(r.required(n, at, "gpus_per_node"), at, "gpus_per_node"));
    if (const YAML::Node g = n["gpus_per_thread"]) {
      c.gpus_per_thread = static_cast<int>(r.positive_int(g, at, "gpus_per_thread"));
      if (c.gpus_per_thread > c.gpus_per_node || c.gpus_per_node % c.gpus_per_thread != 0) {
        r.fail(g, at,
               fmt::format("gpus_per_thread {}: expected a whole number that divides gpus_per_node {} (a "
                           "thread drives GPUs of its own node)",
                           c.gpus_per_thread, c.gpus_per_node));
      }
    }
    if (const YAML::Node env = n["env"]) {
      if (!env.IsMap()) r.fail(env, at, "env: expected a mapping of variables");
      for (const auto& kv : env) c.env[kv.first.as<std::string>()] = r.string(kv.second, at, "env");
    }
    const YAML::Node bw = r.required(n, at, "busbw_GBps");
    if (!bw.IsMap() || bw.size() == 0) r.fail(bw, at, "busbw_GBps: expected a mapping of sizes to GB/s");
    for (const auto& kv : bw) {
      Bytes bytes = 0;
      try {
        bytes = parse_size(kv.first.as<std::string>());
      } catch (const ConfigError& e) {
        r.fail(kv.first, at, fmt::format("busbw_GBps: {}", e.what()));
      }
      c.busbw.emplace_back(static_cast<double>(bytes), r.positive_number(kv.second, at, "busbw_GBps"));
    }
    std::sort(c.busbw.begin(), c.busbw.end());
    if (n["unsupported"]) c.unsupported = r.string(n["unsupported"], at, "unsupported");
    if (n["excluded"]) c.excluded = r.string(n["excluded"], at, "excluded");
    if (const YAML::Node sim = n["simulate"]) {
      if (!sim.IsMap()) r.fail(sim, at, "simulate: expected a mapping ({topology: NAME} or {generate: KIND, ...})");
      c.simulate = json_of(sim);
      if (const YAML::Node knobs = sim["nccl"]) {
        if (!knobs.IsMap()) r.fail(knobs, at, "simulate.nccl: expected a mapping of NCCL_* knobs");
        for (const auto& kv : knobs) c.sim_env[kv.first.as<std::string>()] = r.string(kv.second, at, "simulate.nccl");
        if (!sim["note"])
          r.fail(knobs, at, "simulate.nccl: expected simulate.note saying why the simulation sets them");
        c.sim_note = r.string(sim["note"], at, "simulate.note");
        c.simulate.erase("nccl");
        c.simulate.erase("note");
      }
    }
    if (c.simulate.is_null() && c.unsupported.empty()) {
      r.fail(n, at, "expected simulate: {topology: ...} or {generate: ...}, or unsupported: the reason");
    }
    out.push_back(std::move(c));
  }
  return out;
}

Topology published_topology(const PublishedCase& c) {
  const json& s = c.simulate;
  // Every key is read: one gradsync does not know is an error, not a silent default.
  static const std::map<std::string, std::set<std::string>> kKeys = {
      {"", {"topology"}},
      {"nvswitch", {"generate", "gpu", "gpus", "nics"}},
      {"nvlink-mesh", {"generate", "gpu"}},
      {"pcie", {"generate", "gpu", "gpus", "sockets", "gpus_per_switch", "nvlink_bridge", "cpu", "p2p"}},
      {"fat-tree", {"generate", "nodes", "node", "nics_per_node", "nic_bw"}},
      {"rail-optimized", {"generate", "nodes", "node", "nics_per_node", "nic_bw"}}};
  const auto allowed = kKeys.find(s.contains("topology") ? "" : text_of(s, "generate", "?"));
  if (allowed != kKeys.end()) {
    for (const auto& [k, v] : s.items())
      if (!allowed->second.count(k))
        throw ConfigError(fmt::format("case {}: simulate.{}: unknown key; expected one of {}", c.id, k,
                                      fmt::join(allowed->second, ", ")));
  }
  if (s.contains("topology")) return load_topology(s["topology"].get<std::string>());
  const std::string kind = text_of(s, "generate", "");
  if (kind == "nvswitch") {
    NvswitchOptions o;
    o.gpu = text_of(s, "gpu", o.gpu);
    o.gpus = int_of(s, "gpus", o.gpus, c);
    if (s.contains("nics")) o.nics = int_of(s, "nics", 0, c);
    return generate_nvswitch(o);
  }
  if (kind == "nvlink-mesh") {
    NvlinkMeshOptions o;
    o.gpu = text_of(s, "gpu", o.gpu);
    return generate_nvlink_mesh(o);
  }
  if (kind == "pcie") {
    PcieOptions o;
    o.gpu = text_of(s, "gpu", o.gpu);
    o.gpus = int_of(s, "gpus", o.gpus, c);
    o.sockets = int_of(s, "sockets", o.sockets, c);
    o.gpus_per_switch = int_of(s, "gpus_per_switch", o.gpus_per_switch, c);
    o.nvlink_bridge = text_of(s, "nvlink_bridge", "false") == "true";
    o.cpu = text_of(s, "cpu", o.cpu);
    o.p2p = text_of(s, "p2p", o.p2p);
    return generate_pcie(o);
  }
  if (kind == "fat-tree" || kind == "rail-optimized") {
    FatTreeOptions o;
    o.nodes = int_of(s, "nodes", o.nodes, c);
    o.node = text_of(s, "node", o.node);
    if (s.contains("nics_per_node")) o.nics_per_node = int_of(s, "nics_per_node", 0, c);
    o.nic_bw = text_of(s, "nic_bw", o.nic_bw);
    o.rail_optimized = kind == "rail-optimized";
    return generate_fat_tree(o);
  }
  throw ConfigError(
      fmt::format("case {}: simulate.generate \"{}\": expected nvswitch, nvlink-mesh, pcie, fat-tree or "
                  "rail-optimized",
                  c.id, kind));
}

PublishedResult simulate_published(const PublishedCase& c) {
  const Topology topo = published_topology(c);
  const int n = c.nodes * c.gpus_per_node;
  if (n > topo.gpu_count()) {
    throw ConfigError(fmt::format("case {}: {} GPUs, but its cluster has {}", c.id, n, topo.gpu_count()));
  }
  CollectiveSweep sw;
  sw.gpus = n;
  sw.gpus_per_thread = c.gpus_per_thread;
  sw.op = c.collective;
  sw.fidelity = "step";
  for (const auto& [bytes, gbps] : c.busbw) sw.sizes.push_back(bytes);
  PublishedResult out;
  // The case's NCCL_* settings through the scenario key table (core/scenario_keys.hpp), as
  // --nccl NAME=VALUE reads them; the rest (NCCL_IB_HCA, tuner plugins, ...) are listed as ignored.
  Scenario knobs;
  std::map<std::string, std::string> env = c.env;
  for (const auto& [key, value] : c.sim_env) env[key] = value;
  for (const auto& [key, value] : env) {
    const ScenarioKey* k = find_scenario_key(key);
    const std::vector<std::string_view> names = k == nullptr ? std::vector<std::string_view>{} : nccl_names(*k);
    if (std::find(names.begin(), names.end(), key) == names.end()) {
      if (c.sim_env.count(key)) {
        throw ConfigError(fmt::format("case {}: simulate.nccl {}: not one of gradsync's NCCL knobs", c.id, key));
      }
      out.ignored_env.push_back(fmt::format("{}={}", key, value));
      continue;
    }
    try {
      set_key(knobs, *k, parse_key_value(*k, value));
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("case {}: env {}=\"{}\": {}", c.id, key, value, e.what()));
    }
  }
  // The release the case ran, where it says (the default P2P level depends on it); otherwise
  // PyTorch 2.11's, as `gradsync collectives` assumes.
  try {
    knobs.nccl_version = canonical_nccl_version(c.nccl_version);
  } catch (const ConfigError&) {
    knobs.nccl_version = "auto";
  }
  sw.nccl = nccl_settings(knobs);
  {
    const Routes routes(topo);
    const Transports transports(topo, routes, sw.nccl.transport, n);
    const Channels ch = build_channels(topo, routes, first_ranks(n), transports);
    out.cls = ch.hosts.size() > 1 ? "multi-node" : ch.intra_class <= PathClass::kNVB ? "NVLink node" : "PCIe";
  }
  const std::vector<CollectivePoint> pts = simulate_collectives(sw, topo);
  for (std::size_t i = 0; i < pts.size() && i < c.busbw.size(); ++i) {
    PublishedPoint p;
    p.bytes = c.busbw[i].first;
    p.published_GBps = c.busbw[i].second;
    p.simulated_GBps = pts[i].busbw_GBps;
    p.algorithm = std::string(algorithm_name(pts[i].choice.algorithm));
    p.protocol = std::string(protocol_name(pts[i].choice.protocol));
    out.points.push_back(p);
  }
  return out;
}

json published_json(const PublishedResult& r) {
  json j;
  j["class"] = r.cls;
  j["ignored_env"] = r.ignored_env;
  auto& pts = j["points"] = json::array();
  for (const PublishedPoint& p : r.points) {
    pts.push_back({{"bytes", p.bytes},
                   {"published_GBps", p.published_GBps},
                   {"simulated_GBps", p.simulated_GBps},
                   {"algorithm", p.algorithm},
                   {"protocol", p.protocol}});
  }
  return j;
}

PublishedResult published_from_json(const json& j) {
  PublishedResult r;
  r.cls = j.at("class").get<std::string>();
  r.ignored_env = j.at("ignored_env").get<std::vector<std::string>>();
  for (const json& p : j.at("points")) {
    r.points.push_back({p.at("bytes").get<double>(), p.at("published_GBps").get<double>(),
                        p.at("simulated_GBps").get<double>(), p.at("algorithm").get<std::string>(),
                        p.at("protocol").get<std::string>()});
  }
  return r;
}

}  // namespace gradsync::sim
