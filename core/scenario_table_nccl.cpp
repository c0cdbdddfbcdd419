// scenario_table_nccl.cpp: the NCCL_* rows of the scenario key table (scenario_table.hpp), NCCL's
// knobs under their own names.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/nccl_knobs.hpp"
#include "core/scenario.hpp"
#include "core/scenario_table.hpp"

namespace gradsync {
namespace {

std::string canonical_algos(std::string_view text) { return canonical_nccl_list(text, kNcclAlgorithms); }
std::string canonical_protos(std::string_view text) { return canonical_nccl_list(text, kNcclProtocols); }
std::string canonical_level(std::string_view text) { return canonical_nccl_level(text); }

// kChannelKnobBounds: what NCCL's integer parameters take (NCCL_PARAM reads an int64, the channel
// code keeps an int); NCCL clamps the value itself (adjust_*), and caps it at its release's
// MAXCHANNELS (core/nccl_release.hpp nccl_max_channels, applied by the simulator).
constexpr std::int64_t kChannelKnobMin = -2147483648LL, kChannelKnobMax = 2147483647LL;

// adjust_min_nchannels: connect.cc ncclMinNchannels: below 0 is 0 (no minimum: unset).
std::int64_t adjust_min_nchannels(std::int64_t v) { return v < 0 ? 0 : v; }
// adjust_max_nchannels: connect.cc ncclMaxNchannels: -2 is NCCL's "unset"; any other value below 1
// is 1 ("User asked for a maximum of %d channels, setting it to 1").
std::int64_t adjust_max_nchannels(std::int64_t v) { return v == -2 ? 0 : v < 1 ? 1 : v; }

}  // namespace

std::vector<ScenarioKey> nccl_scenario_keys() {
  using S = Scenario;
  return {
      // NCCL's knobs, as NCCL's environment variables (NCCL 2.27 src/init.cc, src/graph/*.cc):
      // `--nccl NAME=VALUE`, the same names in a scenario file, as CSV columns and with --vary.
      {.name = "NCCL_ALGO",
       .flag = "--algo",
       .value_name = "ALGOS",
       .help = "NCCL_ALGO: ring, tree, nvls, nvlstree, a comma list of them, or ^list to exclude",
       .default_text = "unset: NCCL's tuning model picks per call",
       .kind = KeyKind::kSpec,
       .field = &S::nccl_algo,
       .canonical = canonical_algos,
       .engine_default = true,
       .nccl = true,
       .aliases = {"algo"}},
      {.name = "NCCL_PROTO",
       .flag = "--proto",
       .value_name = "PROTOS",
       .help = "NCCL_PROTO: ll, ll128, simple, a comma list of them, or ^list to exclude",
       .default_text = "unset: NCCL's tuning model picks per call",
       .kind = KeyKind::kSpec,
       .field = &S::nccl_proto,
       .canonical = canonical_protos,
       .engine_default = true,
       .nccl = true,
       .aliases = {"proto"}},
      {.name = "NCCL_P2P_DISABLE",
       .value_name = "0|1",
       .help = "NCCL_P2P_DISABLE=1: no peer-to-peer between GPUs; one host's GPUs go through host memory (SHM)",
       .default_text = "0",
       .kind = KeyKind::kSwitch,
       .field = &S::nccl_p2p_disable,
       .nccl = true},
      {.name = "NCCL_P2P_LEVEL",
       .value_name = "LEVEL",
       .help = "NCCL_P2P_LEVEL: the farthest path P2P takes: LOC, NVL, NVB, PIX, PXB, PHB, SYS (or 0-5)",
       .default_text = "unset: nccl_version's default (2.23 on: PXB, SYS for 2 GPUs on AMD)",
       .kind = KeyKind::kSpec,
       .field = &S::nccl_p2p_level,
       .canonical = canonical_level,
       .engine_default = true,
       .nccl = true},
      {.name = "NCCL_SHM_DISABLE",
       .value_name = "0|1",
       .help = "NCCL_SHM_DISABLE=1: no SHM transport; GPUs of one host without P2P go through the network",
       .default_text = "0",
       .kind = KeyKind::kSwitch,
       .field = &S::nccl_shm_disable,
       .nccl = true},
      {.name = "NCCL_NVLS_ENABLE",
       .value_name = "0|1|2",
       .help = "NCCL_NVLS_ENABLE: NVLink SHARP (the NVSwitch reduces) on H100, H200, B200: 0 off, 1 on, 2 auto",
       .default_text = "unset: 2",
       .kind = KeyKind::kSpec,
       .field = &S::nccl_nvls_enable,
       .canonical = canonical_nccl_nvls,
       .engine_default = true,
       .nccl = true},
      {.name = "NCCL_MIN_NCHANNELS",
       .value_name = "N",
       .help = "NCCL_MIN_NCHANNELS (NCCL 2.5): at least N ring and tree channels (rings repeated); as NCCL takes it, "
               "below 0 is no minimum and above MAXCHANNELS (32; 64 from 2.25) is MAXCHANNELS",
       .default_text = "unset",
       .kind = KeyKind::kCount,
       .field = &S::nccl_min_nchannels,
       .min = kChannelKnobMin,
       .max = kChannelKnobMax,
       .adjust = adjust_min_nchannels,
       .engine_default = true,
       .nccl = true},
      {.name = "NCCL_MAX_NCHANNELS",
       .value_name = "N",
       .help = "NCCL_MAX_NCHANNELS (NCCL 2.5): at most N ring and tree channels of those NCCL's search finds (NVLS "
               "keeps its own); as NCCL takes it, below 1 is 1 and above MAXCHANNELS is MAXCHANNELS",
       .default_text = "unset",
       .kind = KeyKind::kCount,
       .field = &S::nccl_max_nchannels,
       .min = kChannelKnobMin,
       .max = kChannelKnobMax,
       .adjust = adjust_max_nchannels,
       .engine_default = true,
       .nccl = true},
      {.name = "NCCL_MIN_CTAS",
       .value_name = "N",
       .help = "NCCL_MIN_CTAS (NCCL 2.17): at least N thread blocks per NCCL kernel: ring and tree channels as "
               "NCCL_MIN_NCHANNELS, and NVLS's (16 on Hopper)",
       .default_text = "unset",
       .kind = KeyKind::kCount,
       .field = &S::nccl_min_ctas,
       .min = kChannelKnobMin,
       .max = kChannelKnobMax,
       .adjust = adjust_min_nchannels,
       .engine_default = true,
       .nccl = true},
      {.name = "NCCL_MAX_CTAS",
       .value_name = "N",
       .help = "NCCL_MAX_CTAS (NCCL 2.17): at most N thread blocks per NCCL kernel: ring and tree channels as "
               "NCCL_MAX_NCHANNELS, and NVLS's (16 on Hopper, 24 on Blackwell)",
       .default_text = "unset",
       .kind = KeyKind::kCount,
       .field = &S::nccl_max_ctas,
       .max = kChannelKnobMax,
       .engine_default = true,
       .nccl = true},
      {.name = "NCCL_NET_GDR_LEVEL",
       .value_name = "LEVEL",
       .help = "NCCL_NET_GDR_LEVEL: the farthest GPU-NIC path GPUDirect RDMA takes (as NCCL_P2P_LEVEL); farther, "
               "data goes through host memory",
       .default_text = "unset: PXB",
       .kind = KeyKind::kSpec,
       .field = &S::nccl_net_gdr_level,
       .canonical = canonical_level,
       .engine_default = true,
       .nccl = true},
      {.name = "NCCL_IB_DISABLE",
       .value_name = "0|1",
       .help = "NCCL_IB_DISABLE=1: TCP sockets instead of InfiniBand/RoCE verbs: no GPUDirect RDMA",
       .default_text = "0",
       .kind = KeyKind::kSwitch,
       .field = &S::nccl_ib_disable,
       .nccl = true},
      {.name = "NCCL_PXN_DISABLE",
       .value_name = "0|1",
       .help = "NCCL_PXN_DISABLE=1 (NCCL 2.12): no PXN: a GPU whose NIC is behind its CPU sends through host memory "
               "instead of over NVLink into the NIC's own GPU",
       .default_text = "0",
       .kind = KeyKind::kSwitch,
       .field = &S::nccl_pxn_disable,
       .nccl = true},
  };
}

}  // namespace gradsync
