// advice.hpp: what to change (core/advice.hpp) as stdout prints it.
//
//   print_advice(advice, std::cout);
//   # what to change in the DDP run (192.380 ms, 665.4 samples/s): 20 changes simulated, ...
//   # change           steady  samples/s   gain  maths  in the script
//     torch.compile   150.214      852.1  +28.1      -  model = torch.compile(model)
#pragma once

#include <ostream>

#include "core/advice.hpp"

namespace gradsync::reports {

// print_advice: the best changes (advised: at most Advice::kShown, each gaining at least
// Advice::kMinGain), with what each alters in the maths, then what did not run.
void print_advice(const Advice& a, std::ostream& out);

}  // namespace gradsync::reports
