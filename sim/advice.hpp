// advice.hpp: every change of core/advice.hpp simulated on the same engine as the run, each in
// its own process, several at once, within a time budget.
//
//   const StrategyResult ddp = simulate_isolated(s, Strategy::kDDP);
//   const Advice a = advise(s, ddp, {.budget_s = 60, .jobs = 2});
//   advised(a)   // the best changes, each with its step time, gain and line of PyTorch
#pragma once

#include "core/advice.hpp"
#include "core/result.hpp"
#include "core/scenario.hpp"

namespace gradsync::sim {

struct AdviceOptions {
  // budget_s: wall clock for all changes; those not done by then are "budget". Infinite (no
  // budget): every change runs, whatever the machine.
  double budget_s = 60;
  int jobs = 1;  // simulations at once
};

// advise simulates the changes to `asked` (the scenario as given: keys it leaves unset are
// resolved again for each change) that apply to `run` (its result under run.strategy), and ranks
// them by samples per second against `run`. The changes run in candidate order, so a budget that
// suffices gives the same advice on every machine.
Advice advise(const Scenario& asked, const StrategyResult& run, const AdviceOptions& o);

}  // namespace gradsync::sim
