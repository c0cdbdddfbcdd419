// result_bytes.cpp: the result record as a child process hands it to its parent (result.hpp).
#include <fmt/format.h>

#include <cstring>
#include <unordered_map>

#include "core/error.hpp"
#include "core/json_text.hpp"
#include "core/result.hpp"

namespace gradsync {
namespace {

constexpr char kMagic[4] = {'G', 'S', 'R', '1'};

template <typename T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

// Reader: bounds-checked reads from the bytes, each a RuntimeError past their end.
struct Reader {
  std::string_view in;
  std::size_t at = 0;
  std::string_view take(std::size_t n) {
    if (n > in.size() - at) throw RuntimeError(fmt::format("result: record cut short at byte {} of {}", at, in.size()));
    const std::string_view s = in.substr(at, n);
    at += n;
    return s;
  }
  template <typename T>
  T get() {
    T v;
    std::memcpy(&v, take(sizeof(T)).data(), sizeof(T));
    return v;
  }
};

}  // namespace

std::string result_bytes(const StrategyResult& r, bool full) {
  std::string out(kMagic, sizeof kMagic);
  const std::string head = json_text(result_json(r, full, /*events=*/false));
  put<std::uint64_t>(out, head.size());
  out += head;
  if (!full) return out;
  // Names once each, in order of first use; every event then names its index.
  std::unordered_map<std::string_view, std::uint32_t> index;
  std::vector<std::string_view> names;
  std::vector<std::uint32_t> of;
  of.reserve(r.trace.events.size());
  for (const TraceEvent& e : r.trace.events) {
    const auto [it, added] = index.try_emplace(e.name, static_cast<std::uint32_t>(names.size()));
    if (added) names.push_back(e.name);
    of.push_back(it->second);
  }
  put<std::uint64_t>(out, names.size());
  for (std::string_view n : names) {
    put<std::uint64_t>(out, n.size());
    out += n;
  }
  put<std::uint64_t>(out, r.trace.events.size());
  out.reserve(out.size() + r.trace.events.size() * 45);
  for (std::size_t i = 0; i < r.trace.events.size(); ++i) {
    const TraceEvent& e = r.trace.events[i];
    put<std::int32_t>(out, e.rank);
    put<std::int32_t>(out, static_cast<std::int32_t>(e.stream));
    put<std::uint32_t>(out, of[i]);
    put<double>(out, e.start_s);
    put<double>(out, e.end_s);
    put<std::uint64_t>(out, e.bytes);
    put<std::int32_t>(out, e.bucket);
    put<std::int32_t>(out, e.iteration);
    put<std::int32_t>(out, e.peer);
  }
  return out;
}

StrategyResult result_from_bytes(std::string_view bytes) {
  Reader in{bytes};
  if (in.take(sizeof kMagic) != std::string_view(kMagic, sizeof kMagic))
    throw RuntimeError("result: not a gradsync result record (no GSR1 header)");
  const auto head_size = in.get<std::uint64_t>();
  nlohmann::ordered_json head;
  try {
    head = nlohmann::ordered_json::parse(in.take(head_size));
  } catch (const nlohmann::ordered_json::exception& e) {
    throw RuntimeError(fmt::format("result: not a gradsync result record: {}", e.what()));
  }
  StrategyResult r = result_from_json(head);
  if (in.at == bytes.size()) return r;
  std::vector<std::string> names(in.get<std::uint64_t>());
  for (std::string& n : names) n = std::string(in.take(in.get<std::uint64_t>()));
  constexpr std::size_t kEventBytes = 48;  // as result_bytes writes one
  const auto count = in.get<std::uint64_t>();
  if (count != (bytes.size() - in.at) / kEventBytes || (bytes.size() - in.at) % kEventBytes != 0)
    throw RuntimeError(
        fmt::format("result: {} events do not fill the record's last {} bytes", count, bytes.size() - in.at));
  r.trace.events.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    TraceEvent e;
    e.rank = in.get<std::int32_t>();
    e.stream = static_cast<Stream>(in.get<std::int32_t>());
    const auto name = in.get<std::uint32_t>();
    if (name >= names.size())
      throw RuntimeError(fmt::format("result: event {} names string {} of {}", i, name, names.size()));
    e.name = names[name];
    e.start_s = in.get<double>();
    e.end_s = in.get<double>();
    e.bytes = in.get<std::uint64_t>();
    e.bucket = in.get<std::int32_t>();
    e.iteration = in.get<std::int32_t>();
    e.peer = in.get<std::int32_t>();
    r.trace.events.push_back(std::move(e));
  }
  return r;
}

}  // namespace gradsync
