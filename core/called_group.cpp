// called_group.cpp: the host's per-call cost before a collective (core/called_group.hpp).
#include "core/called_group.hpp"

#include <fmt/format.h>

namespace gradsync {

std::string call_event(std::string_view name) { return fmt::format("call:{}", name); }

WorkPtr CalledGroup::call(Collective c, const CollectiveOp& op, int root) {
  if (call_s_ > 0) host_.run({call_event(op.name), call_s_, false});
  return issue_collective(inner_, c, op, root);
}

}  // namespace gradsync
