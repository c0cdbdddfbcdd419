// nccl_model.cpp: NCCL's tuning constants (2.27's, and what 2.28 and 2.29 changed) and its
// algorithm/protocol choice.
#include "sim/nccl_model.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/nccl_knobs.hpp"

namespace gradsync::sim {
namespace {

constexpr std::size_t idx(Protocol p) { return static_cast<std::size_t>(p); }
constexpr std::size_t algo_index(Algorithm a) { return static_cast<std::size_t>(a); }

// NCCL 2.27.7 tuning.cc, microseconds, [Ring, Tree, NVLS, NVLSTree][LL, LL128, Simple] (NCCL
// orders Tree before Ring; rows here follow Algorithm).
constexpr std::array<std::array<double, 3>, 4> kBaseLatUs{{{6.6, 14.0, 8.4}, {6.8, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}}};
// hwLat [NVLink, PCI, NET][Ring, Tree, NVLS, NVLSTree][LL, LL128, Simple].
constexpr std::array<std::array<std::array<double, 3>, 4>, 3> kHwLatUs{{
    {{{0.6, 1.9, 3.4}, {0.6, 1.25, 4.0}, {0, 0, 25}, {0, 0, 25}}},
    {{{1.0, 2.5, 5.7}, {1.0, 1.9, 4.0}, {0, 0, 0}, {0, 0, 0}}},
    {{{2.7, 4.0, 14.0}, {5.0, 8.5, 14.0}, {0, 0, 18}, {0, 0, 14}}},
}};
// llMaxBws [Volta, Ampere, Hopper, Blackwell][1 node, 2 nodes, more], GB/s: the LL protocol's
// total cap (tuning.cc's comment calls it LL128's; the code applies it to LL).
constexpr std::array<std::array<double, 3>, 4> kLlMaxBw{
    {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}}};
// Per channel, GB/s: perChMaxRingLL128Bws, perChMaxTreeLL128Bws, perChMaxTreeBws [arch][nodes].
constexpr std::array<std::array<double, 3>, 4> kPerChMaxRingLL128Bw{
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {73.4, 73.4, 73.4}}};
constexpr std::array<std::array<double, 3>, 4> kPerChMaxTreeLL128Bw{
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {73.4, 73.4, 58.0}}};
constexpr std::array<std::array<double, 3>, 4> kPerChMaxTreeBw{
    {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {77.4, 82.8, 72.0}}};
// What NCCL 2.28 changed (tuning.cc at v2.28.9-1, the release PyTorch 2.11 bundles; the constants
// moved into ncclTunerConstantsDefaults): Blackwell's per-channel caps (perChMaxRingLL128Bws 2 nodes
// 34.6; perChMaxTreeLL128Bws {55.6, 31.67, 20.0}; perChMaxTreeBws {70.0, 42.8, 24.0}), the network's
// NVLSTree latency (hwLat NET NVLSTree Simple 14 -> 20.9), and NVLS's bandwidth: nvlsEfficiency
// (Hopper 0.85, Blackwell 0.74), a new perChMaxNVLSTreeBws cap, and NVLS's and NVLSTree's bus-to-
// algorithm ratio nRanks / nsteps where it was 5/6. 2.29 (v2.29.7-1) set Blackwell's
// perChMaxRingLL128Bws to {40, 40, 40}. Later releases' tuning.cc (2.30 rewrote 380 lines) is not
// read: they take 2.29's.
constexpr std::array<std::array<double, 3>, 4> kPerChMaxRingLL128Bw228{
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {73.4, 34.6, 73.4}}};
constexpr std::array<std::array<double, 3>, 4> kPerChMaxRingLL128Bw229{
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}}};
constexpr std::array<std::array<double, 3>, 4> kPerChMaxTreeLL128Bw228{
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}}};
constexpr std::array<std::array<double, 3>, 4> kPerChMaxTreeBw228{
    {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}}};
constexpr std::array<std::array<double, 3>, 4> kPerChMaxNvlsTreeBw228{
    {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 43.8}}};
constexpr std::array<double, 4> kNvlsEfficiency228{0.0, 0.0, 0.85, 0.74};
constexpr double kNetNvlsTreeLatUs228 = 20.9;

// treeCorrectionFactor [LL, LL128, Simple][log2(bytes / 64)]: the tree's bandwidth by size.
constexpr std::array<std::array<double, 23>, 3> kTreeCorrection{{
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
}};

std::size_t arch_index(int sm) { return sm >= 100 ? 3 : sm >= 90 ? 2 : sm >= 80 ? 1 : 0; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

int log2i(double n) {
  int l = 0;
  while (std::ldexp(1.0, l + 1) <= n) ++l;
  return l;
}

// Model: one (algorithm, protocol)'s algorithm bandwidth (GB/s) and latency (us), as
// ncclTopoTuneModel computes them; bw 0 when NCCL would not run it.
struct Model {
  double bus = 0, alg = 0, lat = 0;
  // rate: for NVLS and NVLSTree, the algorithm bandwidth the simulated call moves data at: NCCL
  // 2.27's estimate (channels x min(bwIntra, bwInter) x 5/6), which the measured NVLS calls match
  // (validation/published). 2.28 estimates NVLS lower for its choice (nvlsEfficiency) without the
  // hardware changing. Other algorithms: alg.
  double rate = 0;
};

Model tune(Collective c, Algorithm a, Protocol p, const Channels& ch, bool ll128_asked, NcclRelease release) {
  Model m;
  const int n = static_cast<int>(ch.ranks.size());
  const int nodes = ch.nodes();
  const int ppn = std::max(1, n / nodes);
  const std::size_t arch = arch_index(ch.sm_version);
  const std::size_t scale = nodes == 1 ? 0 : nodes == 2 ? 1 : 2;
  const bool allreduce = c == Collective::kAllreduce;
  // The graph's channels (tuning.cc graphs[a]->nChannels): the searched rings, whatever
  // NCCL_MAX_NCHANNELS leaves running.
  double channels = static_cast<double>(ch.searched > 0 ? ch.searched : static_cast<int>(ch.rings.size()));
  double bw = 0;              // GB/s per channel
  double legacy_nvls_bw = 0;  // NCCL 2.27's NVLS and NVLSTree bandwidth per channel (Model::rate)
  const bool tuning_228 = release.at_least(2, 28);
  // nvls_228: NCCL 2.28's NVLS and NVLSTree bandwidth per channel (allreduce), or 0 where it does
  // not run them (fewer than 2 channels).
  const auto nvls_228 = [&](bool tree) {
    const double k = ch.nvls->channels;
    if (k < 2) return 0.0;
    const double intra = ch.nvls->bw_intra_Bps / 1e9 * kNvlsEfficiency228[arch] * (k - 1) / k * 2.0;
    const double inter = ch.nvls->bw_inter_Bps / 1e9 * (tree && nodes <= 2 ? 2.0 : 1.0);
    return std::min({intra, inter, tree ? kPerChMaxNvlsTreeBw228[arch][scale] : std::numeric_limits<double>::max()});
  };
  switch (a) {
    case Algorithm::kRing:
      bw = ch.channel_bw_Bps / 1e9;
      break;
    case Algorithm::kTree:
      if (!allreduce || nodes < 2) return m;
      bw = (nodes <= 2 ? ch.tree_bw_intra_Bps : ch.tree_bw_inter_Bps) / 1e9;
      break;
    case Algorithm::kNvls:
      // NVLS across nodes needs CollNet (SHARP), which NCCL enables only when asked.
      if (!allreduce || !ch.nvls || nodes > 1 || p != Protocol::kSimple) return m;
      channels = ch.nvls->channels;
      legacy_nvls_bw = std::min(ch.nvls->bw_intra_Bps, ch.nvls->bw_inter_Bps) / 1e9;
      bw = tuning_228 ? nvls_228(false) : legacy_nvls_bw;
      break;
    case Algorithm::kNvlsTree:
      if (!allreduce || !ch.nvls || nodes < 2 || p != Protocol::kSimple) return m;
      channels = ch.nvls->channels;
      legacy_nvls_bw =
          std::min(ch.nvls->bw_intra_Bps, nodes <= 2 ? ch.nvls->bw_inter_Bps : ch.nvls->bw_inter_Bps / 2) / 1e9;
      bw = tuning_228 ? nvls_228(true) : legacy_nvls_bw;
      break;
  }
  if (!(bw > 0)) return m;
  double bus = channels * bw;
  const auto& ring_ll128_cap = release.at_least(2, 29) ? kPerChMaxRingLL128Bw229
                               : tuning_228            ? kPerChMaxRingLL128Bw228
                                                       : kPerChMaxRingLL128Bw;
  const auto& tree_ll128_cap = tuning_228 ? kPerChMaxTreeLL128Bw228 : kPerChMaxTreeLL128Bw;
  const auto& tree_cap = tuning_228 ? kPerChMaxTreeBw228 : kPerChMaxTreeBw;
  // LL's cap: by GPU generation on one node, by CPU vendor across nodes (tuning.cc: llMaxBws'
  // Volta row for Intel, its Ampere row for AMD).
  const std::size_t ll_row = nodes == 1 ? arch : ch.amd ? 1 : 0;
  if (a == Algorithm::kRing && p == Protocol::kLL) bus = std::min(kLlMaxBw[ll_row][scale], bus * 0.5);
  if (a == Algorithm::kRing && p == Protocol::kLL128)
    bus = std::min(bus * 0.92, channels * ring_ll128_cap[arch][scale]);
  if (a == Algorithm::kTree) bus = std::min(bus * 0.92, channels * tree_cap[arch][scale]);
  if (a == Algorithm::kTree && p == Protocol::kLL) bus = std::min(bus / 3.8, kLlMaxBw[ll_row][scale]);
  if (a == Algorithm::kTree && p == Protocol::kLL128) {
    bus = std::min(bus * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), channels * tree_ll128_cap[arch][scale]);
  }
  // One GPU per node: the search's tree pattern is TREE (search.cc ncclTopoCompute), which the model
  // charges 0.85 (tuning.cc maxTreePattern).
  if (a == Algorithm::kTree && ppn == 1) bus *= 0.85;
  // LL128 by default only where the release enables it (ll128_by_default); never for NVLS. Only
  // by default: NCCL_PROTO set at all leaves LL128 enabled or disabled as its list says (tuning.cc:
  // parseList gives every protocol 0 or 1, and the NVLink test runs only for LL128's default 2), so
  // `NCCL_PROTO=LL128` or `^LL` runs it over PCIe too.
  if (p == Protocol::kLL128 && !ll128_asked &&
      !ll128_by_default(release, ch.sm_version, ch.intra_class, ch.inter_class, ch.inter_pxn))
    return m;
  m.bus = bus;
  const int steps = ring_steps(c, n);
  const double ratio = a == Algorithm::kRing || (tuning_228 && a != Algorithm::kTree) ? static_cast<double>(n) / steps
                       : a == Algorithm::kTree                                        ? 0.5
                                                                                      : 5.0 / 6.0;
  m.alg = bus * ratio;
  m.rate = legacy_nvls_bw > 0 ? channels * legacy_nvls_bw * 5.0 / 6.0 : m.alg;

  // Latency (us).
  const HopKind intra_hw = hop_kind(ch.intra_class);
  double intra = kHwLatUs[static_cast<std::size_t>(intra_hw)][algo_index(a)][idx(p)];
  // "With ppn=1 latencies are fully exposed, use the Tree network latency" (tuning.cc): one GPU
  // per node takes the tree's network latency whatever the algorithm.
  double inter = kHwLatUs[2][algo_index(ppn == 1 ? Algorithm::kTree : a)][idx(p)];
  if (tuning_228 && ppn > 1 && a == Algorithm::kNvlsTree && p == Protocol::kSimple) inter = kNetNvlsTreeLatUs228;
  m.lat = kBaseLatUs[algo_index(a)][idx(p)];
  switch (a) {
    case Algorithm::kRing: {
      if (nodes > 1) {
        // getNetOverhead: 1 us on Intel, 2 on AMD; three times for Simple.
        const double overhead = (ch.amd ? 2.0 : 1.0) * (p == Protocol::kSimple ? 3 : 1);
        intra = std::max(intra, overhead);
      }
      const int inter_steps = nodes == 1 ? 0 : allreduce ? 2 * (nodes - 1) : nodes - 1;
      if (c == Collective::kBroadcast || c == Collective::kReduce) {
        // tuning.cc: the hop's latency once where every channel is the same ring (sameChannels),
        // else once per step, the tree's for Simple ("some chunk latency"); on the network's row
        // across nodes, with no network overhead.
        const std::size_t hw = nodes == 1 ? static_cast<std::size_t>(intra_hw) : 2;
        if (ch.same_channels) {
          m.lat += kHwLatUs[hw][algo_index(a)][idx(p)];
        } else {
          const Algorithm per_step = p == Protocol::kSimple ? Algorithm::kTree : a;
          m.lat += steps * kHwLatUs[hw][algo_index(per_step)][idx(p)];
        }
      } else {
        m.lat += (steps - inter_steps) * intra + inter_steps * inter;
      }
      break;
    }
    case Algorithm::kTree:
      m.lat += 2 * ((ppn - 1) * intra + log2i(nodes) * inter);
      break;
    case Algorithm::kNvls:
      m.lat = kHwLatUs[0][algo_index(a)][idx(p)];
      break;
    case Algorithm::kNvlsTree:
      m.lat += kHwLatUs[0][algo_index(a)][idx(p)] + 2 * log2i(nodes) * inter;
      break;
  }
  return m;
}

// kPhysical: the release whose model the simulated calls spend (CollectiveChoice::latency_s,
// rate_Bps): 2.27's, which the published measurements were checked against; 2.28 and 2.29 change
// NCCL's estimates, and so its choice, not the hardware (NVLS at 0.85 of what 2.27 said, and the
// network's NVLSTree latency 14 -> 20.9 us, while the measured NVLS calls match 2.27's rate).
constexpr NcclRelease kPhysical{2, 27};

// Estimate: tune's model of a pair, with ncclTopoGetAlgoTime's corrections by size: the tree's
// bandwidth (from 2.29 also Blackwell's NVLSTree on x86 hosts, one more size at the last factor)
// and the ring's latency plateau across nodes (x1.4 from Ampere on, 1.9 before).
struct Estimate {
  Model m;
  double alg = 0, lat = 0;
};
Estimate estimate(Collective c, Algorithm a, Protocol p, const Channels& ch, bool ll128_asked, NcclRelease release,
                  double bytes) {
  Estimate e;
  e.m = tune(c, a, p, ch, ll128_asked, release);
  e.alg = e.m.alg;
  e.lat = e.m.lat;
  if (!(e.m.alg > 0)) return e;
  const int k = static_cast<int>(ch.ranks.size());
  const int log_size = log2i(std::max(1.0, bytes / 64));
  if (a == Algorithm::kTree && log_size >= 0 && log_size < 23 && bytes >= 64)
    e.alg *= kTreeCorrection[idx(p)][static_cast<std::size_t>(log_size)];
  if (a == Algorithm::kNvlsTree && release.at_least(2, 29) && ch.sm_version >= 100 && !ch.arm &&
      c == Collective::kAllreduce && log_size >= 0 && log_size < 24 && bytes >= 64)
    e.alg *= kTreeCorrection[idx(p)][std::min<std::size_t>(static_cast<std::size_t>(log_size), 22)];
  if (a == Algorithm::kRing && p == Protocol::kSimple && ch.nodes() > 1 && c == Collective::kAllreduce &&
      bytes / (static_cast<double>(launched_channels(ch)) * k) >= 64)
    e.lat *= ch.sm_version < 80 ? 1.9 : 1.4;
  return e;
}

}  // namespace

int ring_steps(Collective c, int k) {
  switch (c) {
    case Collective::kAllreduce:
      return 2 * (k - 1);
    case Collective::kAllgather:
    case Collective::kReduceScatter:
      return k - 1;
    case Collective::kBroadcast:
    case Collective::kReduce:
      return k;
  }
  return k - 1;
}

std::string_view nccl_model_version(NcclRelease r) {
  return r.at_least(2, 29) ? "2.29" : r.at_least(2, 28) ? "2.28" : "2.27";
}

std::string_view algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kTree:
      return "tree";
    case Algorithm::kNvls:
      return "nvls";
    case Algorithm::kNvlsTree:
      return "nvlstree";
  }
  return "ring";
}

std::string_view protocol_name(Protocol p) {
  switch (p) {
    case Protocol::kLL:
      return "LL";
    case Protocol::kLL128:
      return "LL128";
    case Protocol::kSimple:
      return "Simple";
  }
  return "Simple";
}

std::optional<Algorithm> parse_algorithm(std::string_view text) {
  const std::string t = lower(text);
  if (t == "auto" || t.empty()) return std::nullopt;
  for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kNvls, Algorithm::kNvlsTree})
    if (t == algorithm_name(a)) return a;
  throw ConfigError(fmt::format("algorithm \"{}\": expected ring, tree, nvls, nvlstree or auto", text));
}

std::optional<Protocol> parse_protocol(std::string_view text) {
  const std::string t = lower(text);
  if (t == "auto" || t.empty()) return std::nullopt;
  if (t == "ll") return Protocol::kLL;
  if (t == "ll128") return Protocol::kLL128;
  if (t == "simple") return Protocol::kSimple;
  throw ConfigError(fmt::format("protocol \"{}\": expected ll, ll128, simple or auto", text));
}

CollectiveRequest CollectiveRequest::only(std::optional<Algorithm> a, std::optional<Protocol> p) {
  CollectiveRequest r;
  if (a) r.algorithms = std::string(algorithm_name(*a));
  if (p) r.protocols = lower(protocol_name(*p));
  return r;
}

HopKind hop_kind(PathClass c) {
  switch (c) {
    case PathClass::kNVL:  // NVB is not: tuning.cc takes NVLink's latencies for typeIntra LINK_NVL only
      return HopKind::kNvlink;
    case PathClass::kNET:
      return HopKind::kNet;
    default:
      return HopKind::kPci;
  }
}

double base_latency_s(Algorithm a, Protocol p) { return kBaseLatUs[algo_index(a)][idx(p)] * 1e-6; }

double hop_latency_s(HopKind h, Algorithm a, Protocol p) {
  return kHwLatUs[static_cast<std::size_t>(h)][algo_index(a)][idx(p)] * 1e-6;
}

double wire_factor(Protocol p) {
  switch (p) {
    case Protocol::kLL:
      return 2.0;
    case Protocol::kLL128:
      return 128.0 / 120.0;
    case Protocol::kSimple:
      return 1.0;
  }
  return 1.0;
}

double ampere_nvlink_write_factor(Protocol p, const Channels& ch) {
  // Every hop an NVLink between A100s (a ring through PCIe hops is set by them, not by NVLink).
  if (p == Protocol::kSimple || !ch.p2p_read || ch.intra_class != PathClass::kNVL || ch.nodes() > 1) return 1.0;
  return 1.0 / kAmpereNvlinkWriteEfficiency;
}

bool ll128_by_default(NcclRelease r, int sm, PathClass intra, PathClass inter, bool pxn) {
  if (!r.at_least(2, 5)) return false;
  if (intra > (r.at_least(2, 19) ? PathClass::kNVB : PathClass::kNVL)) return false;
  if (r.at_least(2, 8) && (inter > PathClass::kPXB || (pxn && !(sm >= 90 && r.at_least(2, 17))))) return false;
  if (r.at_least(2, 27)) return sm >= 70;
  switch (sm) {
    case 70:
      return true;
    case 80:
      return r.at_least(2, 7);
    case 90:
      return r.at_least(2, 15);
    case 100:
    case 120:
      return r.at_least(2, 25);
    default:
      return false;
  }
}

CollectiveChoice choose_collective(Collective c, double op_bytes, const Channels& ch, const CollectiveRequest& req) {
  const int k = static_cast<int>(ch.ranks.size());
  const double bytes = tuning_bytes(c, op_bytes, k);
  CollectiveChoice best;
  if (k <= 1) return best;  // nothing moves
  best.predicted_s = std::numeric_limits<double>::infinity();
  for (int pass = 0; pass < 2 && !std::isfinite(best.predicted_s); ++pass) {
    // Pass 1: what the user allows; pass 2 (not strict): the ring, as a collective NCCL_ALGO
    // leaves nothing for falls back to.
    for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kNvls, Algorithm::kNvlsTree}) {
      if (pass == 0 && !nccl_list_allows(req.algorithms, algorithm_name(a))) continue;
      if (pass == 1 && a != Algorithm::kRing) continue;
      if ((a == Algorithm::kNvls || a == Algorithm::kNvlsTree) && !req.nvls) continue;
      if (a == Algorithm::kNvlsTree && !req.nvls_tree) continue;
      for (Protocol p : {Protocol::kLL, Protocol::kLL128, Protocol::kSimple}) {
        if (!nccl_list_allows(req.protocols, lower(protocol_name(p)))) continue;
        if (p == Protocol::kLL128 && !req.nccl.at_least(2, 5)) continue;  // no LL128 before NCCL 2.5
        const Estimate e = estimate(c, a, p, ch, !req.protocols.empty(), req.nccl, bytes);
        if (!(e.m.alg > 0)) continue;
        const double t = k <= 1 ? 0.0 : e.lat * 1e-6 + bytes / (e.alg * 1e9);
        if (t < best.predicted_s) {
          best = {a, p, t, e.m.bus * 1e9, e.alg * 1e9, e.lat * 1e-6, 0};
          best.rate_Bps = (a == Algorithm::kNvls || a == Algorithm::kNvlsTree ? e.m.rate : e.alg) * 1e9;
          if (req.nccl.at_least(2, 28)) {
            // What the simulated call spends: NCCL 2.27's latency for the pair (kPhysical).
            const Estimate phys = estimate(c, a, p, ch, true, kPhysical, bytes);
            if (phys.m.alg > 0) best.latency_s = phys.lat * 1e-6;
          }
        }
      }
    }
    if (!std::isfinite(best.predicted_s) && ((req.strict && !req.ring_backup) || pass == 1)) {
      refuse_collective(c, ch, req);
    }
  }
  best.sync_s = pipeline_sync_s(c, bytes, ch, best.algorithm, best.protocol, best.rate_Bps);
  best.write_factor = ampere_nvlink_write_factor(best.protocol, ch);
  return best;
}

}  // namespace gradsync::sim
