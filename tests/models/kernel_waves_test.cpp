// kernel_waves_test.cpp: wave quantisation and split-K of GEMMs against closed forms.
#include "models/kernel_waves.hpp"

#include <gtest/gtest.h>

namespace gradsync {
namespace {

TEST(KernelWaves, WholeWavesOfTiles) {
  // 2048 x 2048: 16 x 16 = 256 tiles on 108 SMs: 3 waves, the last 40 of 108 full.
  const Waves w = gemm_waves_of({1, 2048, 2048, 4096}, 128, 108);
  EXPECT_DOUBLE_EQ(w.split, 1.0);
  EXPECT_DOUBLE_EQ(w.ctas, 256.0);
  EXPECT_DOUBLE_EQ(w.efficiency, 256.0 / (3 * 108));
}

TEST(KernelWaves, BatchedProductsCountEveryTile) {
  const Waves w = gemm_waves_of({12, 384, 384, 64}, 128, 80);  // 12 x 3 x 3 = 108 tiles: 2 waves
  EXPECT_DOUBLE_EQ(w.ctas, 108.0);
  EXPECT_DOUBLE_EQ(w.efficiency, 108.0 / 160);
}

TEST(KernelWaves, FewTilesSplitKToFillOneWave) {
  // A weight gradient of 768 x 768 over 122880 tokens on an H100: 36 tiles, K in 3 slices.
  const Waves w = gemm_waves_of({1, 768, 768, 122880}, 128, 132);
  EXPECT_DOUBLE_EQ(w.split, 3.0);
  EXPECT_DOUBLE_EQ(w.ctas, 108.0);
  EXPECT_DOUBLE_EQ(w.efficiency, 108.0 / 132);
}

TEST(KernelWaves, SlicesAreAtLeastOneTileDeep) {
  // 4 tiles could split 20 ways on 80 SMs, but K = 384 makes only 3 slices of 128.
  const Waves w = gemm_waves_of({1, 128, 512, 384}, 128, 80);
  EXPECT_DOUBLE_EQ(w.split, 3.0);
  EXPECT_DOUBLE_EQ(w.efficiency, 12.0 / 80);
  // More tiles than half the SMs: no split, one partly empty wave.
  EXPECT_DOUBLE_EQ(gemm_waves_of({1, 1568, 512, 4608}, 128, 80).split, 1.0);
  EXPECT_DOUBLE_EQ(gemm_waves_of({1, 1568, 512, 4608}, 128, 80).efficiency, 52.0 / 80);
}

}  // namespace
}  // namespace gradsync
