// scenario_grid.hpp: the grid of a sweep: `--vary KEY=VALUES` read through the scenario key table
// (the same parsing, units and checks as the key's flag), ranges expanded, and the points of the
// grid in order, the last --vary changing fastest.
//
//   const Vary g = parse_vary("gpus=1:64:x2");         // 1, 2, 4, 8, 16, 32, 64
//   const Vary c = parse_vary("bucket_cap_mb=1,25MiB");  // 1, 25 (MiB)
//   const std::vector<GridPoint> pts = expand_grid(Scenario{}, {g, c});   // x strategy dp, ddp
//
// VALUES is a comma-separated list; for a whole-number key (gpus, batch_per_gpu, ...) and a size
// in MiB (bucket_cap_mb) an item may be a range: `A..B` (every integer from A to B), `A:B:xF`
// (A, A*F, A*F^2, ... up to B) or `A:B:S` / `A:B:+S` (A, A+S, ... up to B). The key `strategy`
// (dp, ddp) is the grid's own; without it every point runs both.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "core/scenario.hpp"
#include "core/strategy.hpp"

namespace gradsync {

// Vary: one --vary: the key (as the table names it, or "strategy") and its values, parsed, with
// the text each is shown as in labels ("25", "true", "ddp").
struct Vary {
  std::string key;
  std::vector<nlohmann::ordered_json> values;
  std::vector<std::string> labels;
};

// kMaxVaryValues: values one --vary may expand to (a range written wrong must not fill memory).
inline constexpr std::size_t kMaxVaryValues = 10000;

// parse_vary reads KEY=VALUES. UsageError naming the --vary text and what was expected for an
// unknown key, an empty or repeated value (25 and 25MiB are the same value), a bad range or a
// value the key's flag would refuse.
Vary parse_vary(std::string_view text);

// vary_key_names: "strategy, model, topology, ..." for messages.
std::string vary_key_names();

// GridPoint: one scenario and strategy of the grid, with its label ("gpus=8 bucket_cap_mb=25 ddp").
struct GridPoint {
  int index = 0;
  Scenario scenario;
  Strategy strategy = Strategy::kDDP;
  std::string label;
};

// expand_grid: every combination of the varied values over `base`, in --vary order with the last
// key changing fastest; strategy (dp, ddp) is added as the last key unless it is varied. UsageError
// when a key is varied twice, or the grid has more than kMaxVaryValues points.
std::vector<GridPoint> expand_grid(const Scenario& base, std::vector<Vary> vary);

}  // namespace gradsync
