// scenario_table.hpp: the rows of the scenario key table, built once by scenario_table()
// (scenario_keys.hpp). Internal to core/.
#pragma once

#include <vector>

#include "core/scenario_keys.hpp"

namespace gradsync {

// make_scenario_table: every key, in the order files, flags, result.json and the CSV list them.
std::vector<ScenarioKey> make_scenario_table();

// nccl_scenario_keys: the NCCL_* keys, the table's last rows (scenario_table_nccl.cpp).
std::vector<ScenarioKey> nccl_scenario_keys();

}  // namespace gradsync
