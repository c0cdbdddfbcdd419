// scenario.cpp: scenario keys, the YAML scenario file and the scenario as JSON.
#include "core/scenario.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/yaml_reader.hpp"

namespace gradsync {

using json = nlohmann::ordered_json;

const std::vector<std::string>& scenario_keys() {
  static const std::vector<std::string> keys{"model",
                                             "topology",
                                             "gpus",
                                             "batch_per_gpu",
                                             "seq_len",
                                             "precision",
                                             "optimizer",
                                             "bucket_cap_mb",
                                             "grad_accum",
                                             "comm_hook",
                                             "find_unused_parameters",
                                             "static_graph",
                                             "gradient_as_bucket_view",
                                             "iterations",
                                             "warmup",
                                             "algo",
                                             "proto",
                                             "fidelity",
                                             "calibration"};
  return keys;
}

Scenario read_scenario_file(const std::string& path, Scenario s) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("{}: cannot read the scenario file (missing or unreadable)", path));
  std::stringstream text;
  text << in.rdbuf();
  const YamlReader r(path);
  const YAML::Node root = r.load(text.str());
  if (!root.IsMap()) r.fail(root, "scenario", "expected a mapping of scenario keys (model: gpt2, gpus: 8, ...)");
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(scenario_keys().begin(), scenario_keys().end(), key) == scenario_keys().end()) {
      std::string known;
      for (const auto& k : scenario_keys()) known += (known.empty() ? "" : ", ") + k;
      r.fail(kv.first, "scenario", fmt::format("unknown key \"{}\"; expected one of {}", key, known));
    }
  }
  const std::string where = "scenario";
  auto has = [&](const char* k) { return root[k] && !root[k].IsNull(); };
  if (has("model")) s.model = r.string(root["model"], where, "model");
  if (has("topology")) s.topology = r.string(root["topology"], where, "topology");
  if (has("gpus")) s.gpus = static_cast<int>(r.positive_int(root["gpus"], where, "gpus"));
  if (has("batch_per_gpu")) s.batch_per_gpu = r.positive_int(root["batch_per_gpu"], where, "batch_per_gpu");
  if (has("seq_len")) s.seq_len = r.positive_int(root["seq_len"], where, "seq_len");
  if (has("precision")) s.precision = r.string(root["precision"], where, "precision");
  if (has("optimizer")) s.optimizer = r.string(root["optimizer"], where, "optimizer");
  if (has("bucket_cap_mb")) s.bucket_cap_mb = r.positive_number(root["bucket_cap_mb"], where, "bucket_cap_mb");
  if (has("grad_accum")) s.grad_accum = static_cast<int>(r.positive_int(root["grad_accum"], where, "grad_accum"));
  if (has("comm_hook")) s.comm_hook = r.string(root["comm_hook"], where, "comm_hook");
  if (has("find_unused_parameters"))
    s.find_unused_parameters = r.boolean(root["find_unused_parameters"], where, "find_unused_parameters");
  if (has("static_graph")) s.static_graph = r.boolean(root["static_graph"], where, "static_graph");
  if (has("gradient_as_bucket_view"))
    s.gradient_as_bucket_view = r.boolean(root["gradient_as_bucket_view"], where, "gradient_as_bucket_view");
  if (has("iterations")) s.iterations = static_cast<int>(r.positive_int(root["iterations"], where, "iterations"));
  if (has("warmup")) s.warmup = static_cast<int>(r.non_negative_int(root["warmup"], where, "warmup"));
  if (has("algo")) s.algo = r.string(root["algo"], where, "algo");
  if (has("proto")) s.proto = r.string(root["proto"], where, "proto");
  if (has("fidelity")) s.fidelity = r.string(root["fidelity"], where, "fidelity");
  if (has("calibration")) s.calibration = r.string(root["calibration"], where, "calibration");
  return s;
}

json scenario_json(const Scenario& s) {
  json j;
  j["model"] = s.model;
  j["topology"] = s.topology;
  j["gpus"] = s.gpus;
  j["batch_per_gpu"] = s.batch_per_gpu;
  j["seq_len"] = s.seq_len;
  j["precision"] = s.precision;
  j["optimizer"] = s.optimizer;
  j["bucket_cap_mb"] = s.bucket_cap_mb ? json(*s.bucket_cap_mb) : json(nullptr);
  j["grad_accum"] = s.grad_accum;
  j["comm_hook"] = s.comm_hook;
  j["find_unused_parameters"] = s.find_unused_parameters;
  j["static_graph"] = s.static_graph;
  j["gradient_as_bucket_view"] = s.gradient_as_bucket_view;
  j["iterations"] = s.iterations;
  j["warmup"] = s.warmup;
  j["algo"] = s.algo;
  j["proto"] = s.proto;
  j["fidelity"] = s.fidelity;
  j["calibration"] = s.calibration.empty() ? json(nullptr) : json(s.calibration);
  return j;
}

}  // namespace gradsync
