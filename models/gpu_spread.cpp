// gpu_spread.cpp: the slowest of N GPUs (gpu_spread.hpp).
#include "models/gpu_spread.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string>

namespace gradsync {

double expected_slowest(int n) {
  if (n <= 1) return 0.0;
  // E[max] = integral of x n phi(x) Phi(x)^(n-1) dx; the integrand is negligible outside
  // [-12, 12] for any n below 1e12 and smooth, so Simpson's rule on 24000 steps is exact to far
  // below the 1e-9 needed.
  constexpr double kLo = -12.0, kHi = 12.0;
  constexpr int kSteps = 24000;  // even
  const double h = (kHi - kLo) / kSteps;
  const double inv_sqrt_2pi = 1.0 / std::sqrt(2.0 * M_PI);
  const auto f = [n, inv_sqrt_2pi](double x) {
    const double pdf = inv_sqrt_2pi * std::exp(-0.5 * x * x);
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    return cdf <= 0.0 ? 0.0 : x * n * pdf * std::exp((n - 1) * std::log(cdf));
  };
  double sum = f(kLo) + f(kHi);
  for (int i = 1; i < kSteps; ++i) sum += (i % 2 == 1 ? 4.0 : 2.0) * f(kLo + i * h);
  return sum * h / 3.0;
}

double slowest_gpu_factor(int gpus, double spread) {
  if (gpus <= 1 || spread <= 0) return 1.0;
  return 1.0 + spread * expected_slowest(gpus);
}

double gpu_spread(const Scenario& s) {
  return s.gpu_spread_pct.empty() ? kGpuSpread : std::stod(s.gpu_spread_pct) / 100;
}

std::string slowest_gpu_text(const Scenario& s, int gpus) {
  const double f = slowest_gpu_factor(gpus, gpu_spread(s));
  if (f == 1.0 || !s.calibration.empty()) return "";
  return fmt::format("SM-bound kernels at the slowest of {} GPUs' pace, +{:.1f}% (gpu_spread_pct {})", gpus,
                     100 * (f - 1), s.gpu_spread_pct);
}

}  // namespace gradsync
