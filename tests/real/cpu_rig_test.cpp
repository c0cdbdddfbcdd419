// cpu_rig_test.cpp: the CPU engine's buffers under work in flight. A collective's buffer is grown
// on the issuing thread when a later call of the same name is larger (DataParallel's
// "dp:replicate" and "dp:reduce" chunks), while the comm stream may still be running the earlier
// call on the old storage: that storage must outlive the call, not be freed under it (a
// use-after-free that crashed `bench --launch local` once in CI).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "real/cpu_device.hpp"
#include "real/rig.hpp"

namespace gradsync::real {
namespace {

TEST(CpuBuffer, GrowingRetiresTheOldStorageUntilReleased) {
  cpu_detail::Buffer b;
  double allocated = 0;
  char* small = b.get(64, allocated);
  std::memset(small, 7, 64);
  char* large = b.get(1 << 20, allocated);
  EXPECT_NE(small, large);
  ASSERT_EQ(b.retired.size(), 1u) << "the replaced storage was freed while a stream could still use it";
  EXPECT_EQ(b.retired.front().get(), small);
  EXPECT_EQ(small[63], 7) << "the retired storage keeps its bytes";
  EXPECT_EQ(large[0], 0) << "grown storage is zero-filled";
  EXPECT_EQ(allocated, double(1 << 20)) << "what the device holds for its work counts the live storage";
  EXPECT_EQ(b.get(1000, allocated), large) << "a smaller request reuses the storage";
  EXPECT_EQ(b.retired.size(), 1u);
  b.release_retired();
  EXPECT_TRUE(b.retired.empty());
}

// DataParallel's replicate: a broadcast of "dp:replicate" is in flight on GPU0's comm stream,
// waiting for device 1 (busy computing), when the next, larger "dp:replicate" is issued and grows
// the buffer. The first broadcast then reads GPU0's storage: it must still be there.
TEST(CpuRig, ACollectiveInFlightKeepsItsBufferWhenALaterCallOfItsNameGrowsIt) {
  RigOptions o;
  o.launch = Launch::kLocal;
  o.world = 2;
  o.local = 2;
  o.parameter_bytes = 1 << 20;
  o.gradient_bytes = 1 << 20;
  o.timeout_s = 120;
  o.host_name = "test";
  auto rig = make_cpu_rig(o);
  ProcessGroup& group = rig->local_group(2);
  ComputeOp busy;
  busy.name = "fwd:busy";
  busy.kind = OpKind::kMatmul;
  busy.flops = 2.0 * 1536 * 1536 * 1536 * 8;  // eight 1536^3 sgemms: about a second on one core
  rig->device(1).compute(busy);
  const WorkPtr first = group.broadcast({"dp:replicate", Bytes{16} << 20, DType::kFloat32, -1}, 0);
  // Device 0's part has started (it has nothing to wait for) and holds its buffer; device 1's
  // waits behind the GEMMs.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const WorkPtr second = group.broadcast({"dp:replicate", Bytes{64} << 20, DType::kFloat32, -1}, 0);
  first->wait();
  second->wait();
  for (int d = 0; d < 2; ++d) rig->device(d).synchronize();
  EXPECT_GE(rig->peak_bytes(0), double(Bytes{64} << 20));
}

}  // namespace
}  // namespace gradsync::real
