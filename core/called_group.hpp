// called_group.hpp: what issuing a collective costs the host, paid before every call of a process
// group. The simulator wraps each rank's group in it; the real engines do not, because there the
// calls are real.
//
//   CalledGroup g(cluster.world_group(rank), host, costs.host().collective_call_s);
//   g.allreduce(op);   // host: "call:allreduce:bucket3" for collective_call_s, then the collective
#pragma once

#include "core/backend.hpp"

namespace gradsync {

// call_event: the host's event for issuing collective `name`: "call:allreduce:bucket3".
std::string call_event(std::string_view name);

// CalledGroup: `inner` with `call_s` of host time on the calling thread before each collective
// (outside the GIL: c10d's and NCCL's C++), traced as call_event(op.name).
class CalledGroup final : public CollectiveCalls {
 public:
  CalledGroup(ProcessGroup& inner, Host& host, double call_s) : inner_(inner), host_(host), call_s_(call_s) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  WorkPtr call(Collective c, const CollectiveOp& op, int root) override;

 private:
  ProcessGroup& inner_;
  Host& host_;
  double call_s_;
};

}  // namespace gradsync
