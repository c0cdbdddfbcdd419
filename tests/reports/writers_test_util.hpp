// writers_test_util.hpp: a trace event made by hand, for the writers' tests (writers_test.cpp,
// traced_ranks_test.cpp).
#pragma once

#include <string>
#include <utility>

#include "core/trace.hpp"

namespace gradsync::reports::test {

inline TraceEvent event(int rank, Stream s, std::string name, double start, double end, Bytes bytes = 0,
                        int bucket = -1, int iteration = 1) {
  TraceEvent e;
  e.rank = rank;
  e.stream = s;
  e.name = std::move(name);
  e.start_s = start;
  e.end_s = end;
  e.bytes = bytes;
  e.bucket = bucket;
  e.iteration = iteration;
  return e;
}

}  // namespace gradsync::reports::test
