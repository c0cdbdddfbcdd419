// coalesce.cpp: PyTorch's two grouping rules and DDP's coalesced broadcast.
#include "core/coalesce.hpp"

#include <deque>
#include <map>

#include "core/bucket_plan.hpp"

namespace gradsync {
namespace {

// Open groups per dtype, remembered in the order each dtype was first seen.
struct OpenGroups {
  std::vector<DType> seen;
  std::map<DType, std::pair<std::vector<std::size_t>, Bytes>> open;

  std::pair<std::vector<std::size_t>, Bytes>& of(DType t) {
    if (open.find(t) == open.end()) seen.push_back(t);
    return open[t];
  }
  void flush(Groups& out) {
    for (DType t : seen)
      if (!open[t].first.empty()) out.push_back(std::move(open[t].first));
  }
};

}  // namespace

Groups coalesce_reaching(const std::vector<CoalesceTensor>& tensors, Bytes limit) {
  Groups out;
  OpenGroups g;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    auto& [group, size] = g.of(tensors[i].dtype);
    group.push_back(i);
    size += tensors[i].bytes;
    if (size >= limit) {
      out.push_back(std::move(group));
      group.clear();
      size = 0;
    }
  }
  g.flush(out);
  return out;
}

Groups coalesce_before_exceeding(const std::vector<CoalesceTensor>& tensors, Bytes limit) {
  Groups out;
  OpenGroups g;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    auto& [group, size] = g.of(tensors[i].dtype);
    if (size + tensors[i].bytes > limit && size > 0) {
      out.push_back(std::move(group));
      group.clear();
      size = 0;
    }
    group.push_back(i);
    size += tensors[i].bytes;
  }
  g.flush(out);
  return out;
}

Bytes group_bytes(const std::vector<CoalesceTensor>& tensors, const std::vector<std::size_t>& group) {
  Bytes total = 0;
  for (std::size_t i : group) total += tensors[i].bytes;
  return total;
}

void broadcast_coalesced(const std::vector<CoalesceTensor>& tensors, Bytes limit, const std::string& name, Device& dev,
                         ProcessGroup& pg, const CostModel& costs) {
  std::vector<BucketTensor> bt;
  for (const CoalesceTensor& t : tensors) bt.push_back({t.bytes, t.dtype, false});
  struct InFlight {
    WorkPtr work;
    Bytes bytes;
    int tensors;
  };
  std::deque<InFlight> in_flight;
  // finish: the compute stream waits for the broadcast, then copies the flat result back.
  auto finish = [&](const InFlight& f) {
    dev.stream_wait(Stream::kCompute, *f.work);
    dev.compute(costs.memory(name + ":unflatten", 2.0 * static_cast<double>(f.bytes), f.tensors));
  };
  for (const AssignedBucket& b : compute_bucket_assignment_by_size(bt, {limit})) {
    // c10d keeps at most two broadcasts in flight to bound the memory of flat copies.
    if (in_flight.size() >= 2) {
      finish(in_flight.front());
      in_flight.pop_front();
    }
    Bytes bytes = 0;
    for (std::size_t i : b.indices) bytes += tensors[i].bytes;
    const int n = static_cast<int>(b.indices.size());
    dev.compute(costs.memory(name + ":flatten", 2.0 * static_cast<double>(bytes), 1));  // one cat kernel
    CollectiveOp op{name, bytes, tensors[b.indices.front()].dtype, -1};
    in_flight.push_back({pg.broadcast(op, 0), bytes, n});
  }
  while (!in_flight.empty()) {
    finish(in_flight.front());
    in_flight.pop_front();
  }
}

}  // namespace gradsync
