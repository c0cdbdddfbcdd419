// trace.hpp: the events every engine records, and the names the strategy code gives them.
//
// An event is one piece of work on one rank's stream with its start and end. Engines record
// what the step drivers issue, under the names the drivers chose, so a simulated and a real run
// of one scenario have the same events and `validate` can pair them:
//
//   fwd:<layer>  bwd:<layer>  optimizer  loss  copy_in:<param>  copy_out:<param>
//   allreduce:bucket<k>  broadcast:buffers  dp:scatter  dp:replicate  dp:gather  dp:reduce ...
//   iteration:<n>  (host stream, from the start of step n to its end)
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/backend.hpp"
#include "core/units.hpp"

namespace gradsync {

// TraceEvent is one recorded piece of work.
struct TraceEvent {
  int rank = 0;
  Stream stream = Stream::kCompute;
  std::string name;
  double start_s = 0;
  double end_s = 0;
  Bytes bytes = 0;    // bytes moved (copies, collectives) or touched (memory kernels)
  int bucket = -1;    // DDP bucket, -1 for none
  int iteration = 0;  // 1-based training step; 0 before the first (construction)
  int peer = -1;      // the other device of a copy, -1 for none

  double duration_s() const { return end_s - start_s; }
};

// Trace is the events of one run, in the order they were recorded.
struct Trace {
  std::vector<TraceEvent> events;
  void add(TraceEvent e) { events.push_back(std::move(e)); }
};

// Event names, in one place so that every engine and report spells them alike.
std::string forward_event(std::string_view layer);            // "fwd:<layer>"
std::string backward_event(std::string_view layer);           // "bwd:<layer>"
std::string bucket_event(std::string_view what, int bucket);  // "allreduce:bucket3"
std::string iteration_event(int iteration);                   // "iteration:3"
// slowdown_event: the compute stream's extra time from running beside collective `collective`
// (its SMs and DRAM shared with NCCL's kernel): "slowdown:allreduce:bucket3".
std::string slowdown_event(std::string_view collective);
// wait_event: the name of the time a collective's kernel spent waiting for the call's last member
// before its own work ("wait:allreduce:bucket3"); is_wait_event tells such names. Neither
// communication nor compute: the --explain phase "waiting for peers".
std::string wait_event(std::string_view collective);
bool is_wait_event(std::string_view name);

// is_host_copy_event: a copy from host memory ("h2d:input"). x.to(device) runs it on the current
// stream, so it sits in the compute lane, but it moves bytes and counts as communication.
bool is_host_copy_event(std::string_view name);

}  // namespace gradsync
