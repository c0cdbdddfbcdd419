// strategy.hpp: DataParallel or DistributedDataParallel, and how flags and files spell them.
#pragma once

#include <optional>
#include <string_view>

namespace gradsync {

enum class Strategy { kDP, kDDP };

// strategy_label: "dp" or "ddp".
constexpr std::string_view strategy_label(Strategy s) { return s == Strategy::kDP ? "dp" : "ddp"; }

// parse_strategy: "dp" or "ddp"; nullopt otherwise.
constexpr std::optional<Strategy> parse_strategy(std::string_view text) {
  if (text == "dp") return Strategy::kDP;
  if (text == "ddp") return Strategy::kDDP;
  return std::nullopt;
}

}  // namespace gradsync
