// nccl_release.hpp: the NCCL release a run links (scenario key nccl_version), by default the one
// PyTorch's binaries bundle for pytorch_version, and the rule of NCCL's that changed across the
// releases gradsync models: how far peer-to-peer reaches by default (topologies/transports/p2p.cpp).
//
//   bundled_nccl(parse_pytorch_version("2.6"))          // {2, 21}
//   resolve_nccl_release("auto", "1.7")                 // {2, 7}
//   resolve_nccl_release("2.18.3", "2.11")              // {2, 18}
#pragma once

#include <string>
#include <string_view>

#include "core/pytorch_version.hpp"

namespace gradsync {

struct NcclRelease {
  int major = 2;
  int minor = 28;
  bool operator<(const NcclRelease& o) const { return major != o.major ? major < o.major : minor < o.minor; }
  bool at_least(int ma, int mi) const { return !(*this < NcclRelease{ma, mi}); }
  std::string text() const;  // "2.28"
};

// kOldestNccl: the oldest release read (2.4: the one PyTorch 1.4, gradsync's oldest, bundles).
inline constexpr NcclRelease kOldestNccl{2, 4};
// kNewestNccl: the newest release published when this table was last read (NCCL's tag v2.30.7-1);
// a later number is refused rather than read as a release whose rules are unknown.
inline constexpr NcclRelease kNewestNccl{2, 30};

// nccl_max_channels: the release's MAXCHANNELS (src/include/device.h), the most channels NCCL
// runs and the cap of NCCL_MIN/MAX_NCHANNELS and NCCL_MIN/MAX_CTAS: 16 in 2.4, 32 from 2.5, 64
// from 2.25 (checked at NCCL's tags v2.4.8-1, v2.5.6-1, v2.24.3-1 and v2.25.1-1).
inline int nccl_max_channels(NcclRelease r) { return r.at_least(2, 25) ? 64 : r.at_least(2, 5) ? 32 : 16; }

// bundled_nccl: the NCCL release PyTorch's Linux CUDA binaries of that version link (the
// third_party/nccl pin, and the nvidia-nccl-cu* wheel from 1.13 on; core/nccl_release.cpp cites each).
NcclRelease bundled_nccl(PytorchVersion v);

// parse_nccl_version reads "2.21", "2.18.3" or "2.18.3-1" (NCCL's tags); ConfigError saying what
// is expected otherwise, or for a release before 2.4 (the caller names the key and the text).
NcclRelease parse_nccl_version(std::string_view text);
// canonical_nccl_version: "auto", or "M.N" of a parsed release (the scenario key's canonical form).
std::string canonical_nccl_version(std::string_view text);
// resolve_nccl_release: `nccl_version` ("auto": PyTorch's bundled release for `pytorch_version`).
NcclRelease resolve_nccl_release(std::string_view nccl_version, std::string_view pytorch_version);

}  // namespace gradsync
