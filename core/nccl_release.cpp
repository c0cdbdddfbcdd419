// nccl_release.cpp: NCCL releases (see nccl_release.hpp).
#include "core/nccl_release.hpp"

#include <fmt/format.h>

#include <charconv>

#include "core/error.hpp"

namespace gradsync {

std::string NcclRelease::text() const { return fmt::format("{}.{}", major, minor); }

NcclRelease bundled_nccl(PytorchVersion v) {
  // PyTorch's NCCL pins: pytorch/pytorch#23186 "Update nccl to 2.4.8-1" (2019-07, releases 1.2-1.5);
  // #40621 "updating nccl to 2.7.3" (2020-06, 1.6); #45251 "Bump up NCCL to 2.7.8" (2020-09, 1.7-1.9);
  // 2.10.3 from 1.10 (#76206, 2022-04: "The current PyTorch links NCCL v2.10.3-1 by default", through
  // 1.12); the nvidia-nccl-cu11/cu12 wheel that pip installs beside torch from 1.13: 2.14.3 (1.13,
  // 2.0), 2.18.1 (2.1; #111677 quotes generate_binary_build_matrix.py of v2.1.1), 2.19.3 (2.2),
  // 2.20.5 (2.3, 2.4), 2.21.5 (2.5, 2.6), 2.26.2 (2.7), 2.27.3 (2.8), 2.27.5 (2.9, 2.10) and 2.28.9
  // (2.11): RELEASE.md's compatibility matrix (#190386, taken from each release branch's
  // .ci/docker/ci_commit_pins/nccl*.txt). Only the minor release decides a rule gradsync models.
  if (!v.at_least(1, 6)) return {2, 4};
  if (!v.at_least(1, 10)) return {2, 7};
  if (!v.at_least(1, 13)) return {2, 10};
  if (!v.at_least(2, 1)) return {2, 14};
  if (!v.at_least(2, 2)) return {2, 18};
  if (!v.at_least(2, 3)) return {2, 19};
  if (!v.at_least(2, 5)) return {2, 20};
  if (!v.at_least(2, 7)) return {2, 21};
  if (!v.at_least(2, 8)) return {2, 26};
  if (!v.at_least(2, 11)) return {2, 27};
  return {2, 28};
}

NcclRelease parse_nccl_version(std::string_view text) {
  const auto bad = [&] {
    return ConfigError(fmt::format(
        "expected auto or an NCCL release M.N (2.21, 2.18.3 or 2.18.3-1 as NCCL's tags name it), from {} to {} (the "
        "newest gradsync knows)",
        kOldestNccl.text(), kNewestNccl.text()));
  };
  // A number with a leading zero (2.021, 02.21) is no release name: as PyTorch's versions, refused.
  for (std::size_t i = 0; i + 1 < text.size(); ++i)
    if (text[i] == '0' && (i == 0 || text[i - 1] == '.' || text[i - 1] == '-') && text[i + 1] >= '0' &&
        text[i + 1] <= '9')
      throw bad();
  NcclRelease r;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  auto [q, e1] = std::from_chars(p, end, r.major);
  if (e1 != std::errc{} || q == end || *q != '.') throw bad();
  auto [s, e2] = std::from_chars(q + 1, end, r.minor);
  if (e2 != std::errc{} || s == q + 1) throw bad();
  if (s != end) {  // a patch release, then NCCL's build suffix (-1): digits only
    if (*s != '.') throw bad();
    int patch = 0;
    auto [t, e3] = std::from_chars(s + 1, end, patch);
    if (e3 != std::errc{} || t == s + 1) throw bad();
    if (t != end) {
      int build = 0;
      if (*t != '-') throw bad();
      auto [u, e4] = std::from_chars(t + 1, end, build);
      if (e4 != std::errc{} || u != end || u == t + 1) throw bad();
    }
  }
  if (r < kOldestNccl || kNewestNccl < r) throw bad();
  return r;
}

std::string canonical_nccl_version(std::string_view text) {
  if (text == "auto") return "auto";
  return parse_nccl_version(text).text();
}

NcclRelease resolve_nccl_release(std::string_view nccl_version, std::string_view pytorch_version) {
  if (nccl_version.empty() || nccl_version == "auto") return bundled_nccl(parse_pytorch_version(pytorch_version));
  return parse_nccl_version(nccl_version);
}

}  // namespace gradsync
