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

// PowerSGD's P, Q and uncompressed tensors are in the bucket's dtype (powerSGD_hook: dtype =
// input_tensor.dtype): a bf16 model's allreduces move half a float32 one's bytes, in bf16.
TEST(CommHook, PowerSgdAllreducesInTheBucketsType) {
  const CommHook psgd = parse_comm_hook("powersgd:rank=1,start_iter=2");
  const std::vector<HookStep> f32 = hook_steps(psgd, kShapes, 8, 3);
  const std::vector<HookStep> bf16 = hook_steps(psgd, kShapes, 8, 3, DType::kBFloat16);
  ASSERT_EQ(f32.size(), bf16.size());
  int collectives = 0;
  for (std::size_t i = 0; i < f32.size(); ++i) {
    if (f32[i].kind != HookStep::Kind::kAllreduce) continue;
    ++collectives;
    EXPECT_EQ(f32[i].dtype, DType::kFloat32) << f32[i].name;
    EXPECT_EQ(bf16[i].dtype, DType::kBFloat16) << bf16[i].name;
    EXPECT_EQ(2 * bf16[i].bytes, f32[i].bytes) << f32[i].name;
  }
  EXPECT_EQ(collectives, 3);  // the uncompressed tensors, P and Q
}

}  // namespace comm_hook_test
}  // namespace gradsync
