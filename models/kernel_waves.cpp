// kernel_waves.cpp: wave quantisation of GEMMs (kernel_waves.hpp).
#include "models/kernel_waves.hpp"

#include <algorithm>
#include <cmath>

namespace gradsync {

Waves gemm_waves_of(const GemmShape& g, int tile, int sms) {
  const double t = std::max(1, tile);
  const double units = std::max(1, sms);
  const double tiles = std::ceil(std::max(1.0, g.m) / t) * std::ceil(std::max(1.0, g.n) / t) * std::max(1.0, g.batch);
  Waves w;
  if (tiles < units) w.split = std::max(1.0, std::min(std::floor(units / tiles), std::floor(g.k / t)));
  w.ctas = tiles * w.split;
  w.efficiency = w.ctas / (std::ceil(w.ctas / units) * units);
  return w;
}

}  // namespace gradsync
