// backend.cpp: names of streams, op kinds and collectives, and the trace's event names.
#include "core/backend.hpp"

#include <fmt/format.h>

#include "core/trace.hpp"

namespace gradsync {

std::string_view stream_name(Stream s) {
  switch (s) {
    case Stream::kCompute:
      return "compute";
    case Stream::kComm:
      return "comm";
    case Stream::kCopy:
      return "copy";
    case Stream::kHost:
      return "host";
  }
  return "?";
}

std::string_view op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::kMatmul:
      return "matmul";
    case OpKind::kConv:
      return "conv";
    case OpKind::kAttention:
      return "attention";
    case OpKind::kMemory:
      return "memory";
  }
  return "?";
}

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::kAllreduce:
      return "allreduce";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kReduce:
      return "reduce";
    case Collective::kAllgather:
      return "allgather";
    case Collective::kReduceScatter:
      return "reducescatter";
  }
  return "?";
}

std::optional<Collective> parse_collective(std::string_view text) {
  for (Collective c : kCollectives)
    if (collective_name(c) == text) return c;
  return std::nullopt;
}

WorkPtr issue_collective(ProcessGroup& pg, Collective c, const CollectiveOp& op, int root) {
  switch (c) {
    case Collective::kAllreduce:
      return pg.allreduce(op);
    case Collective::kBroadcast:
      return pg.broadcast(op, root);
    case Collective::kReduce:
      return pg.reduce(op, root);
    case Collective::kAllgather:
      return pg.allgather(op);
    case Collective::kReduceScatter:
      return pg.reduce_scatter(op);
  }
  return pg.allreduce(op);
}

double bus_factor(Collective c, int n) {
  switch (c) {
    case Collective::kAllreduce:
      return 2.0 * (n - 1) / n;
    case Collective::kAllgather:
    case Collective::kReduceScatter:
      return static_cast<double>(n - 1) / n;
    case Collective::kBroadcast:
    case Collective::kReduce:
      return 1.0;
  }
  return 1.0;
}

std::string forward_event(std::string_view layer) { return fmt::format("fwd:{}", layer); }
std::string backward_event(std::string_view layer) { return fmt::format("bwd:{}", layer); }
std::string bucket_event(std::string_view what, int bucket) { return fmt::format("{}:bucket{}", what, bucket); }
std::string iteration_event(int iteration) { return fmt::format("iteration:{}", iteration); }
std::string slowdown_event(std::string_view collective) { return fmt::format("slowdown:{}", collective); }

bool is_host_copy_event(std::string_view name) { return name.rfind("h2d:", 0) == 0; }

std::string wait_event(std::string_view collective) { return "wait:" + std::string(collective); }

bool is_wait_event(std::string_view name) { return name.rfind("wait:", 0) == 0; }

}  // namespace gradsync
