// nccl_options.cpp: NCCL's knobs from the scenario to the simulator.
#include "sim/nccl_options.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <string>

#include "core/error.hpp"
#include "core/nccl_release.hpp"

namespace gradsync::sim {

std::optional<PathClass> path_level(std::string_view level) {
  if (level == "NVL") return PathClass::kNVL;
  if (level == "NVB") return PathClass::kNVB;
  if (level == "PIX") return PathClass::kPIX;
  if (level == "PXB") return PathClass::kPXB;
  if (level == "PHB") return PathClass::kPHB;
  if (level == "SYS") return PathClass::kSYS;
  return std::nullopt;  // LOC
}

void limit_channels(Channels& c, int min, int max, int floor) {
  if (c.rings.empty()) return;
  const int found = launched_channels(c);
  int launched = found;
  if (max > 0) launched = std::min(launched, max);
  if (min > 0) launched = std::max(launched, std::min(min, 64));
  if (floor > 0) launched = std::max(launched, std::min(floor, 64));
  if (launched == found) return;
  // Channel i runs ring i mod (rings): fewer blocks than rings leave the later rings unused.
  if (static_cast<std::size_t>(launched) < c.rings.size()) {
    if (c.searched == 0) c.searched = static_cast<int>(c.rings.size());
    c.rings.resize(static_cast<std::size_t>(launched));
  }
  c.launched = launched;
}

int nvls_channel_floor(const Channels& c, const CollectiveRequest& r) {
  if (!c.nvls || !r.nvls || !r.nccl.at_least(2, 20) || r.nccl.at_least(2, 28)) return 0;
  return c.nvls->launched;
}

void limit_nvls_channels(Channels& c, int min, int max) {
  if (!c.nvls) return;
  int launched = c.nvls->default_launched;
  if (max > 0) launched = std::min(launched, max);
  if (min > 0) launched = std::max(launched, std::min(min, 64));
  c.nvls->launched = launched;
}

namespace {

// refuse_knobs_unread: a knob the release does not read is an error, not a setting that changes
// nothing in NCCL and something in gradsync: NCCL_ALGO and NCCL_PROTO came with NCCL 2.5
// (tuning.cc's getenv; 2.4 chose the tree and LL by size, NCCL_TREE_THRESHOLD and
// NCCL_LL_THRESHOLD); NCCL_NVLS_ENABLE (with NVLS), NCCL_MIN_CTAS and NCCL_MAX_CTAS (init.cc's
// config) with 2.17; NCCL_PXN_DISABLE (paths.cc, with PXN) with 2.12.
void refuse_knobs_unread(const Scenario& s, NcclRelease nccl) {
  struct Knob {
    const char* name;
    std::string value;  // empty: unset
    NcclRelease from;
  };
  const auto count = [](int n) { return n > 0 ? std::to_string(n) : std::string(); };
  const Knob knobs[] = {{"NCCL_ALGO", s.nccl_algo, {2, 5}},
                        {"NCCL_PROTO", s.nccl_proto, {2, 5}},
                        // 2.4 read NCCL_MIN_NRINGS and NCCL_MAX_NRINGS (misc/rings.cc); the
                        // channel names came with 2.5 (graph/connect.cc).
                        {"NCCL_MIN_NCHANNELS", count(s.nccl_min_nchannels), {2, 5}},
                        {"NCCL_MAX_NCHANNELS", count(s.nccl_max_nchannels), {2, 5}},
                        {"NCCL_NVLS_ENABLE", s.nccl_nvls_enable, {2, 17}},
                        {"NCCL_MIN_CTAS", count(s.nccl_min_ctas), {2, 17}},
                        {"NCCL_MAX_CTAS", count(s.nccl_max_ctas), {2, 17}},
                        {"NCCL_PXN_DISABLE", s.nccl_pxn_disable ? "1" : "", {2, 12}}};
  for (const Knob& k : knobs) {
    if (k.value.empty() || nccl.at_least(k.from.major, k.from.minor)) continue;
    throw ConfigError(fmt::format(
        "{}={}: NCCL {} does not read {} (it came with NCCL {}); unset it, or set nccl_version (--nccl-version) to "
        "{} or later",
        k.name, k.value, nccl.text(), k.name, k.from.text(), k.from.text()));
  }
}

}  // namespace

NcclSettings nccl_settings(const Scenario& s) {
  NcclSettings n;
  n.request.algorithms = s.nccl_algo;
  n.request.protocols = s.nccl_proto;
  n.request.nvls = s.nccl_nvls_enable != "0";
  n.transport.p2p_disable = s.nccl_p2p_disable;
  n.transport.nccl = resolve_nccl_release(s.nccl_version, s.pytorch_version);
  if (!s.nccl_p2p_level.empty()) {
    n.transport.p2p_level = path_level(s.nccl_p2p_level);
    if (!n.transport.p2p_level) n.transport.p2p_disable = true;  // LOC: P2P only within one GPU
  }
  n.transport.shm_disable = s.nccl_shm_disable;
  if (!s.nccl_net_gdr_level.empty()) {
    n.transport.net_gdr_level = path_level(s.nccl_net_gdr_level);
    if (!n.transport.net_gdr_level) n.transport.net_gdr_level = PathClass::kNVL;  // LOC: never reached by a NIC
  }
  n.transport.ib_disable = s.nccl_ib_disable;
  n.transport.pxn_disable = s.nccl_pxn_disable;
  n.request.nccl = n.transport.nccl;
  n.request.ring_backup = n.transport.nccl.at_least(2, 19) && !n.transport.nccl.at_least(2, 24);
  refuse_knobs_unread(s, n.transport.nccl);
  // NCCL releases before NVLS (2.17) and NVLSTree (2.18) run neither, whatever the hardware.
  if (!n.transport.nccl.at_least(2, 18)) {
    n.request.release = n.transport.nccl.text();
    n.request.nvls_tree = false;
    if (!n.transport.nccl.at_least(2, 17)) n.request.nvls = false;
  }
  // NCCL 2.17's CTA bounds: a minimum above the maximum sets both to the maximum (init.cc
  // parseCommConfig: "minCTAs %d is larger than maxCTAs %d, set both to %d", an INFO line; only
  // ncclCommInitRankConfig's own config struct is refused so).
  // Every bound is capped at the release's MAXCHANNELS first (connect.cc ncclMinNchannels and
  // ncclMaxNchannels, init.cc "cap channels if needed").
  const int cap = nccl_max_channels(n.transport.nccl);
  const auto capped = [cap](int v) { return std::min(v, cap); };
  int min_ctas = capped(s.nccl_min_ctas);
  const int max_ctas = capped(s.nccl_max_ctas);
  if (min_ctas > 0 && max_ctas > 0 && min_ctas > max_ctas) min_ctas = max_ctas;
  // The rings (connect.cc, after the search): at most the smaller of NCCL_MAX_NCHANNELS and
  // maxCTAs, then copies up to the larger of NCCL_MIN_NCHANNELS and minCTAs. The minimum is applied
  // last, so NCCL_MIN_NCHANNELS above NCCL_MAX_NCHANNELS wins.
  const auto smaller = [](int a, int b) { return a > 0 && b > 0 ? std::min(a, b) : std::max(a, b); };
  n.max_channels = smaller(capped(s.nccl_max_nchannels), max_ctas);
  n.min_channels = std::max(capped(s.nccl_min_nchannels), min_ctas);
  n.nvls_min_channels = min_ctas;
  n.nvls_max_channels = max_ctas;
  return n;
}

}  // namespace gradsync::sim
