// nccl_knobs.hpp: the text of NCCL's environment knobs as NCCL reads it (src/graph/tuning.cc
// parseList for NCCL_ALGO / NCCL_PROTO, src/graph/paths.cc ncclGetLevel for NCCL_P2P_LEVEL and
// NCCL_NET_GDR_LEVEL), checked and written in one canonical spelling. The scenario key table
// (core/scenario_keys.hpp) reads the knobs through these; the simulator turns the canonical text
// into its algorithms, protocols and path classes (sim/nccl_options.hpp).
//
//   canonical_nccl_list("Ring,TREE", kNcclAlgorithms)  == "ring,tree"
//   canonical_nccl_list("tree,ring", kNcclAlgorithms)  == "ring,tree"  (a set: in NCCL's order)
//   canonical_nccl_list("^NVLS", kNcclAlgorithms)      == "^nvls"
//   canonical_nccl_level("2")                          == "PXB"   // NCCL's old numbering
//   canonical_nccl_level("7")                          == "SYS"   // clamped, as NCCL does
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace gradsync {

// kNcclAlgorithms / kNcclProtocols: the names gradsync models (NCCL's spelling, lower case).
// CollNet and PAT are refused by name: gradsync does not model them.
inline constexpr std::string_view kNcclAlgorithms[] = {"ring", "tree", "nvls", "nvlstree"};
inline constexpr std::string_view kNcclProtocols[] = {"ll", "ll128", "simple"};

// canonical_nccl_list: a comma list of names (any case), optionally led by ^ (every name but
// these), in lower case. ConfigError saying what was expected for an empty list, an unknown name
// or one gradsync does not model. "auto" (gradsync's own word for unset) gives "".
std::string canonical_nccl_list(std::string_view text, std::span<const std::string_view> names);

// nccl_list_allows: whether a canonical list (empty: all) allows `name`.
bool nccl_list_allows(std::string_view list, std::string_view name);

// canonical_nccl_level: a path level as NCCL_P2P_LEVEL takes it: LOC, NVL, NVB, PIX, PXB, PHB,
// SYS (NCCL compares them as written: upper case) or NCCL's old integers, read as strtol with base
// 0 reads them (0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and above SYS; 010 is 8). ConfigError otherwise, and
// for text NCCL reads only a prefix of ("08", "4x") or beyond an int.
std::string canonical_nccl_level(std::string_view text);

// canonical_nccl_nvls: NCCL_NVLS_ENABLE: 0 (off), 1 (on where the hardware has it), 2 (auto).
std::string canonical_nccl_nvls(std::string_view text);

}  // namespace gradsync
