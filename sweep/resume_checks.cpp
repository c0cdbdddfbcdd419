// resume_checks.cpp: what sweep --resume checks before it keeps a folder's points (resume_checks.hpp).
#include "sweep/resume_checks.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <fstream>
#include <map>

#include "core/error.hpp"

namespace gradsync::sweep {

// check_resumable: a folder whose result.json another command wrote (compare, simulate, advise)
// holds no sweep to continue; its summary.csv rows would read as points of another scenario.
void check_resumable(const std::filesystem::path& dir, const std::string& out) {
  std::ifstream in(dir / "result.json");
  if (!in) return;  // a new folder, or a sweep killed before it wrote result.json
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return;  // summary.csv's rows are judged as they load
  const auto c = j.find("command");
  if (c == j.end() || !c->is_string() || *c == "sweep") return;
  throw UsageError(fmt::format(
      "--out {} --resume: the folder holds a `gradsync {}` run (its result.json), not a sweep; --resume continues a "
      "sweep in the folder it wrote: give that folder, or another --out",
      out, c->get<std::string>()));
}

// input_digests: the files the points read (model, topology, calibration given as paths, not
// built-in names), each with a digest of its bytes (FNV-1a, 64 bits), by path.
nlohmann::ordered_json input_digests(const std::vector<std::string>& files) {
  std::map<std::string, std::string> digests;
  for (const std::string& path : files) {
    std::error_code ec;
    if (path.empty() || digests.contains(path) || !std::filesystem::is_regular_file(path, ec)) continue;
    std::ifstream in(path, std::ios::binary);
    if (!in) continue;
    std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64's offset basis and prime
    char buf[1 << 16];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
      for (std::streamsize i = 0; i < in.gcount(); ++i) {
        h ^= static_cast<unsigned char>(buf[i]);
        h *= 0x100000001b3ULL;
      }
    }
    digests[path] = fmt::format("fnv1a64:{:016x}", h);
  }
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [path, d] : digests) out[path] = d;
  return out;
}

// check_inputs: a resumed sweep's files are those its points were simulated with: the digests its
// result.json recorded (a sweep that finished) match the files' bytes now. A file edited behind
// the same path would mix the old file's points with the new one's, unsaid.
void check_inputs(const std::filesystem::path& dir, const nlohmann::ordered_json& now) {
  std::ifstream in(dir / "result.json");
  if (!in) return;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("inputs") || !j["inputs"].is_object()) return;
  for (const auto& [path, digest] : j["inputs"].items()) {
    const auto it = now.find(path);
    if (it == now.end() || *it == digest) continue;
    throw UsageError(fmt::format(
        "--resume: {} changed since the sweep's points were simulated ({} then, {} now); start over without "
        "--resume or with another --out",
        path, digest.is_string() ? digest.get<std::string>() : digest.dump(), it->get<std::string>()));
  }
}

}  // namespace gradsync::sweep
