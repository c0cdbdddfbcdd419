// engine_test.cpp: the engine's exact network configuration. With SimGrid's defaults (LV08) a
// transfer of S bytes over one link takes 13.01*a + S/(0.97*B); configured as gradsync does, it
// must take exactly a + S/B.
#include "sim/engine.hpp"

#include <gtest/gtest.h>
#include <simgrid/s4u.hpp>

#include "core/error.hpp"

namespace sg4 = simgrid::s4u;

namespace gradsync::sim {
namespace {

TEST(Engine, OneTransferTakesLatencyPlusSizeOverBandwidth) {
  auto engine = create_engine();
  constexpr double kBandwidth = 25e9;  // bytes/s
  constexpr double kLatency = 5e-6;    // s
  constexpr double kBytes = 64e6;

  auto* zone = sg4::create_full_zone("zone");
  auto* a = zone->create_host("a", 1e12);
  auto* b = zone->create_host("b", 1e12);
  auto* link = zone->create_link("a-b", kBandwidth)->set_latency(kLatency)->seal();
  zone->add_route(a->get_netpoint(), b->get_netpoint(), nullptr, nullptr, {sg4::LinkInRoute(link)}, true);
  zone->seal();

  double arrived = -1;
  sg4::Actor::create("sender", a, [] { sg4::Mailbox::by_name("mb")->put(new int(1), static_cast<uint64_t>(kBytes)); });
  sg4::Actor::create("receiver", b, [&arrived] {
    std::unique_ptr<int> payload(sg4::Mailbox::by_name("mb")->get<int>());
    arrived = sg4::Engine::get_clock();
  });
  engine->run();

  const double expected = kLatency + kBytes / kBandwidth;
  EXPECT_NEAR(arrived, expected, 1e-9 * expected);
}

// Past kUnguardedStacksRanks GPUs the actors' stacks cost no memory mapping each: 40,000 actors
// (80,000 mappings with guard pages, past Linux's default vm.max_map_count of 65,530) all start,
// run and end.
TEST(Engine, ManyRanksGetStacksWithoutAMappingEach) {
#if defined(GRADSYNC_SANITIZED)
  GTEST_SKIP() << "sanitized builds run actors as threads (SimGrid's thread factory), not on its stacks";
#else
  auto engine = create_engine(kUnguardedStacksRanks + 1);
  auto* zone = sg4::create_full_zone("zone");
  auto* h = zone->create_host("h", 1e9);
  zone->seal();
  int done = 0;
  for (int i = 0; i < 40000; ++i)
    sg4::Actor::create("a", h, [&done, i] {
      sg4::this_actor::sleep_for(1e-6 * (i % 7));
      ++done;
    });
  engine->run();
  EXPECT_EQ(done, 40000);
#endif
}

TEST(Engine, SecondEngineInOneProcessIsAnError) {
  auto engine = create_engine();
  EXPECT_THROW(create_engine(), RuntimeError);
}

}  // namespace
}  // namespace gradsync::sim
