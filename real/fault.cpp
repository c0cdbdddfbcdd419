// fault.cpp: GRADSYNC_FAULT for the real engine's tests (fault.hpp).
#include "real/fault.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "core/error.hpp"

namespace gradsync::real {

Fault fault_from_env() {
  const char* v = std::getenv("GRADSYNC_FAULT");
  if (!v || !*v) return {};
  const std::string text = v;
  Fault f;
  const auto colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  f.kind = kind == "stall" ? Fault::kStall : kind == "exit" ? Fault::kExit : Fault::kNone;
  if (f.kind == Fault::kNone || colon == std::string::npos)
    throw UsageError(fmt::format("GRADSYNC_FAULT=\"{}\": expected stall:RANK or exit:RANK", text));
  f.rank = std::atoi(text.c_str() + colon + 1);
  return f;
}

void inject(const Fault& f, int rank, int iteration) {
  if (f.kind == Fault::kNone || f.rank != rank || iteration != 2) return;
  if (f.kind == Fault::kExit) std::_Exit(3);
  std::this_thread::sleep_for(std::chrono::hours(1));
}

}  // namespace gradsync::real
