// comm_hook_test.cpp: hook_steps for buckets of float32 and of 16-bit gradients (a model in
// bf16/fp16 with float32 master weights: mixed_precision master-weights).
#include "core/comm_hook.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace gradsync {
namespace comm_hook_test {

const std::vector<std::vector<std::int64_t>> kShapes = {{1024, 1024}, {1024}};
constexpr double kElements = 1024.0 * 1024 + 1024;

// Without a hook a bucket is one allreduce in its own type: a 16-bit model's moves half the bytes.
TEST(CommHook, WithoutAHookTheBucketIsAllreducedInItsOwnType) {
  const CommHook none = parse_comm_hook("none");
  const std::vector<HookStep> f32 = hook_steps(none, kShapes, 8, 1);
  ASSERT_EQ(f32.size(), 1u);
  EXPECT_EQ(f32[0].bytes, static_cast<Bytes>(4 * kElements));
  EXPECT_EQ(f32[0].dtype, DType::kFloat32);
  const std::vector<HookStep> bf16 = hook_steps(none, kShapes, 8, 1, DType::kBFloat16);
  ASSERT_EQ(bf16.size(), 1u);
  EXPECT_EQ(bf16[0].bytes, static_cast<Bytes>(2 * kElements));
  EXPECT_EQ(bf16[0].dtype, DType::kBFloat16);
}

// The bf16 compression hook on a bucket that is bf16 already: buffer.to(torch.bfloat16) returns
// the buffer itself and the copy back into it does nothing, so only the division runs beside the
// allreduce; on a float32 bucket it casts down and back.
TEST(CommHook, ACompressionHookOnABucketOfItsTypeOnlyDivides) {
  const CommHook bf16 = parse_comm_hook("bf16");
  const std::vector<HookStep> f32 = hook_steps(bf16, kShapes, 8, 1);
  ASSERT_EQ(f32.size(), 3u);
  EXPECT_EQ(f32[1].bytes, static_cast<Bytes>(2 * kElements));
  const std::vector<HookStep> same = hook_steps(bf16, kShapes, 8, 1, DType::kBFloat16);
  ASSERT_EQ(same.size(), 2u);
  EXPECT_EQ(same[0].kind, HookStep::Kind::kKernel);
  EXPECT_DOUBLE_EQ(static_cast<double>(same[0].bytes), 2 * 2 * kElements);  // div_: read and write
  EXPECT_EQ(same[1].kind, HookStep::Kind::kAllreduce);
  EXPECT_EQ(same[1].bytes, static_cast<Bytes>(2 * kElements));
}

}  // namespace comm_hook_test
}  // namespace gradsync
