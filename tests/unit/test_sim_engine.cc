// The simulator's event engine and topologies (src/sim/engine.h, topology.h): one message
// costs alpha + n beta; contention on a shared link serialises all of alpha, or LogGP's gap
// of it; the directions of a link are independent; reductions cost gamma per byte; and a
// node's ranks share its NIC.
#include <gtest/gtest.h>

#include <algorithm>

#include "concord/errors.h"
#include "sim/engine.h"

namespace concord::sim {
namespace {

constexpr LinkParams kLink{2e-6, 1e-9};  // 2 us, 1 GB/s
constexpr double kNoReduce = 0;

double one_message(uint64_t bytes) { return kLink.alpha + bytes * kLink.beta; }

TEST(SimEngine, OneMessageCostsAlphaPlusBytesTimesBeta) {
  for (const uint64_t bytes : {0ull, 1ull, 1000ull, 1ull << 20}) {
    Schedule schedule(2);
    schedule.send(0, 1, bytes, 0);
    const SimResult result = simulate(schedule, Topology::flat(2, kLink), kNoReduce);
    EXPECT_DOUBLE_EQ(result.seconds, one_message(bytes)) << "n=" << bytes;
    EXPECT_EQ(result.traffic.total_messages_sent, 1u) << "n=" << bytes;
    EXPECT_EQ(result.traffic.total_bytes_sent, bytes) << "n=" << bytes;
  }
}

TEST(SimEngine, TwoSendersIntoOneReceiverTakeTwiceAsLong) {
  Schedule schedule(3);
  schedule.send(0, 2, 4096, 0);
  schedule.send(1, 2, 4096, 0);
  EXPECT_DOUBLE_EQ(simulate(schedule, Topology::flat(3, kLink), kNoReduce).seconds, 2 * one_message(4096));
}

TEST(SimEngine, OneSenderToTwoReceiversTakesTwiceAsLong) {
  Schedule schedule(3);
  schedule.send(0, 1, 4096, 0);
  schedule.send(0, 2, 4096, 0);
  EXPECT_DOUBLE_EQ(simulate(schedule, Topology::flat(3, kLink), kNoReduce).seconds, 2 * one_message(4096));
}

// LogGP's gap: only `gap` of alpha occupies the links, the rest is flight time that overlaps
// with the other messages on the same link; a lone message still costs alpha + n beta.
TEST(SimEngine, AGapSmallerThanAlphaLetsMessagesOnOneLinkOverlapTheirLatency) {
  for (const double gap : {0.0, 0.5e-6, 2e-6, 5e-6}) {
    LinkParams link = kLink;
    link.gap = gap;
    const double occupancy = std::min(gap, kLink.alpha);
    Schedule alone(2);
    alone.send(0, 1, 4096, 0);
    EXPECT_DOUBLE_EQ(simulate(alone, Topology::flat(2, link), kNoReduce).seconds, one_message(4096)) << "gap " << gap;
    Schedule into(3);
    into.send(0, 2, 4096, 0);
    into.send(1, 2, 4096, 0);
    EXPECT_DOUBLE_EQ(simulate(into, Topology::flat(3, link), kNoReduce).seconds,
                     kLink.alpha + occupancy + 2 * 4096 * kLink.beta)
        << "gap " << gap;
    Schedule out_of(3);
    out_of.send(0, 1, 0, 0);
    out_of.send(0, 2, 0, 0);
    EXPECT_DOUBLE_EQ(simulate(out_of, Topology::flat(3, link), kNoReduce).seconds, kLink.alpha + occupancy)
        << "gap " << gap;
  }
}

TEST(SimEngine, BothDirectionsOfALinkAreIndependent) {
  Schedule schedule(2);
  schedule.send(0, 1, 4096, 0);
  schedule.send(1, 0, 4096, 0);
  EXPECT_DOUBLE_EQ(simulate(schedule, Topology::flat(2, kLink), kNoReduce).seconds, one_message(4096));
}

TEST(SimEngine, DisjointPairsDoNotContend) {
  Schedule schedule(4);
  schedule.send(0, 1, 4096, 0);
  schedule.send(2, 3, 4096, 0);
  EXPECT_DOUBLE_EQ(simulate(schedule, Topology::flat(4, kLink), kNoReduce).seconds, one_message(4096));
}

TEST(SimEngine, DependentSendWaitsForReceiveAndReduction) {
  const double gamma = 0.5e-9;
  Schedule schedule(3);
  const OpId first = schedule.send(0, 1, 1000, 1000);
  schedule.send(1, 2, 1000, 0, {first});
  const double expected = one_message(1000) + 1000 * gamma + one_message(1000);
  EXPECT_DOUBLE_EQ(simulate(schedule, Topology::flat(3, kLink), gamma).seconds, expected);
}

TEST(SimEngine, ReductionsOfOneRankAreSerialised) {
  const double gamma = 10e-9;  // reductions slower than the wire
  Schedule schedule(3);
  schedule.send(0, 2, 1000, 1000);
  schedule.send(1, 2, 1000, 1000);
  // Second message arrives at 2T; the first reduction ends at T + 1000 gamma > 2T.
  const double expected = one_message(1000) + 2 * 1000 * gamma;
  EXPECT_DOUBLE_EQ(simulate(schedule, Topology::flat(3, kLink), gamma).seconds, expected);
}

TEST(SimEngine, JoinsWaitForAllTheirDependencies) {
  Schedule schedule(3);
  const OpId a = schedule.send(0, 2, 1000, 0);
  const OpId b = schedule.send(1, 2, 3000, 0);
  const OpId both[] = {a, b};
  const OpId join = schedule.join(2, both);
  schedule.send(2, 0, 0, 0, {join});
  const SimResult result = simulate(schedule, Topology::flat(3, kLink), kNoReduce);
  EXPECT_DOUBLE_EQ(result.seconds, one_message(1000) + one_message(3000) + one_message(0));
  EXPECT_EQ(result.traffic.total_messages_sent, 3u);  // the join is not a message
  EXPECT_EQ(result.traffic.max_messages_sent, 1u);
}

TEST(SimEngine, ANodesRanksShareItsNic) {
  const LinkParams intra{1e-6, 0.1e-9}, inter{10e-6, 1e-9};
  const Topology topology = Topology::two_level(4, 2, intra, inter);
  ASSERT_EQ(topology.nodes(), 2);
  Schedule across(4);  // ranks 0, 1 on node 0 send to ranks 2, 3 on node 1
  across.send(0, 2, 1 << 20, 0);
  across.send(1, 3, 1 << 20, 0);
  EXPECT_DOUBLE_EQ(simulate(across, topology, kNoReduce).seconds, 2 * (inter.alpha + (1 << 20) * inter.beta));
  Schedule inside(4);  // intra-node messages use the ranks' own links at intra constants
  inside.send(0, 1, 1 << 20, 0);
  inside.send(2, 3, 1 << 20, 0);
  EXPECT_DOUBLE_EQ(simulate(inside, topology, kNoReduce).seconds, intra.alpha + (1 << 20) * intra.beta);
}

TEST(SimEngine, RejectsMalformedSchedules) {
  Schedule schedule(2);
  EXPECT_THROW(schedule.send(0, 0, 1, 0), InvalidArgument);
  EXPECT_THROW(schedule.send(0, 2, 1, 0), InvalidArgument);
  EXPECT_THROW(schedule.send(0, 1, 1, 0, {5}), InvalidArgument);
  EXPECT_THROW(simulate(schedule, Topology::flat(3, kLink), 0), InvalidArgument);
  EXPECT_THROW(Topology::two_level(4, 0, kLink, kLink), InvalidArgument);
}

}  // namespace
}  // namespace concord::sim
