// fault.hpp: fault injection for the tests of peers that never arrive (real/run.cpp's bench).
// GRADSYNC_FAULT=stall:R makes rank R stop before its second iteration (it sleeps), exit:R makes
// it exit at that point without a word. Read once; anything else there is an error.
#pragma once

namespace gradsync::real {

struct Fault {
  enum Kind { kNone, kStall, kExit } kind = kNone;
  int rank = -1;
};

// fault_from_env: GRADSYNC_FAULT as a Fault (kNone when unset); UsageError for another value.
Fault fault_from_env();
// inject: what the fault does to `rank` in `iteration` (from 1): nothing, an exit or a stall.
void inject(const Fault& f, int rank, int iteration);

}  // namespace gradsync::real
