// Token-bucket links in the simulator (src/sim/engine.h, LinkParams::bucket_bytes): the
// testbed's tbf lets a burst of up to the bucket's depth leave at line rate, shapes the rest
// to the rate, and refills at the rate; back-to-back calls reach a steady state where each
// host sends at most the rate on average.
#include <gtest/gtest.h>

#include <cmath>

#include "concord/errors.h"
#include "sim/engine.h"
#include "sim/validate.h"

namespace concord::sim {
namespace {

constexpr double kAlpha = 10e-6;
constexpr double kBeta = 8e-9;        // the shaped rate: 125 MB/s
constexpr double kLineBeta = 0.5e-9;  // the unshaped link: 2 GB/s
constexpr double kBucket = 256 * 1024;
constexpr LinkParams kShaped{kAlpha, kBeta, kBucket, kLineBeta};
constexpr double kNoReduce = 0;

Schedule one_message(uint64_t bytes) {
  Schedule schedule(2);
  schedule.send(0, 1, bytes, 0);
  return schedule;
}

TEST(SimTokenBucket, AMessageWithinAFullBucketGoesAtLineRate) {
  for (const uint64_t bytes : {0ull, 4ull, 16384ull, 262144ull}) {
    const SimResult result = simulate(one_message(bytes), Topology::flat(2, kShaped), kNoReduce);
    EXPECT_NEAR(result.seconds, kAlpha + bytes * kLineBeta, 1e-12) << "n=" << bytes;
  }
}

TEST(SimTokenBucket, BytesBeyondTheBucketGoAtTheShapedRate) {
  const uint64_t bytes = 4 << 20;
  const SimResult result = simulate(one_message(bytes), Topology::flat(2, kShaped), kNoReduce);
  EXPECT_NEAR(result.seconds, kAlpha + kBucket * kLineBeta + (bytes - kBucket) * kBeta, 1e-9);
}

TEST(SimTokenBucket, BackToBackCallsSettleAtTheShapedRate) {
  // One 64 KiB message per call: the first calls drain the bucket at line rate, then each
  // call waits for its tokens, so the steady period is bytes / rate.
  const uint64_t bytes = 65536;
  const double first = simulate(one_message(bytes), Topology::flat(2, kShaped), kNoReduce, 1).seconds;
  const double steady = simulate(one_message(bytes), Topology::flat(2, kShaped), kNoReduce, 40).seconds;
  EXPECT_NEAR(first, kAlpha + bytes * kLineBeta, 1e-12);
  EXPECT_NEAR(steady, kAlpha + bytes * kBeta, 0.02 * bytes * kBeta)
      << "after 40 calls the bucket should be empty and refill only at the shaped rate";
}

TEST(SimTokenBucket, CallsRunUntilTheBucketsRepeat) {
  // 4 bytes per call never drain the bucket: the second call starts as full as the first,
  // so the simulation stops there. 16 KiB per call drain it by ~14 KiB a call: it runs
  // until the bucket is empty at every call's start, and each call then waits for tokens.
  const SimResult tiny = simulate(one_message(4), Topology::flat(2, kShaped), kNoReduce, 1000);
  EXPECT_EQ(tiny.events, 2u * 2) << "a full bucket is already the steady state: two calls of one message";
  const uint64_t bytes = 16384;
  const SimResult drained = simulate(one_message(bytes), Topology::flat(2, kShaped), kNoReduce, 1000);
  EXPECT_GT(drained.events, 2u * 10) << "stopped before the bucket was drained";
  EXPECT_LT(drained.events, 2u * 1000) << "never reached a steady state";
  EXPECT_NEAR(drained.seconds, kAlpha + bytes * kBeta, 0.02 * bytes * kBeta);
}

TEST(SimTokenBucket, AnIdleLinkRefillsWhileAnotherHostSends) {
  // A tree-like call at P = 2: rank 1 sends to 0, then 0 sends back. Each host's link is idle
  // half the call, so in steady state the call takes about (bytes / rate), not twice that
  // (the plain model's two shaped transfers).
  const uint64_t bytes = 65536;
  Schedule schedule(2);
  const OpId up = schedule.send(1, 0, bytes, bytes);
  schedule.send(0, 1, bytes, 0, {up});
  const double steady = simulate(schedule, Topology::flat(2, kShaped), kNoReduce, 40).seconds;
  const double plain = simulate(schedule, Topology::flat(2, {kAlpha, kBeta}), kNoReduce).seconds;
  EXPECT_NEAR(plain, 2 * (kAlpha + bytes * kBeta), 1e-12);
  EXPECT_LT(steady, 0.6 * plain) << "the buckets refilled during the other host's transfer were not used";
  EXPECT_GT(steady, 0.45 * plain) << "a host sent faster than its rate on average";
}

TEST(SimTokenBucket, ZeroDepthIsThePlainLinkAndCallsMustBePositive) {
  const uint64_t bytes = 1 << 20;
  const LinkParams plain{kAlpha, kBeta};
  EXPECT_DOUBLE_EQ(simulate(one_message(bytes), Topology::flat(2, plain), kNoReduce, 5).seconds,
                   kAlpha + bytes * kBeta);
  EXPECT_THROW(simulate(one_message(bytes), Topology::flat(2, plain), kNoReduce, 0), InvalidArgument);
}

TEST(SimTokenBucket, ValidationPredictsTheShapedSteadyStateAndRejectsIncompleteShaping) {
  // A 16 KiB tree at P = 2, one rank per host, run back to back (concord-bench -T): rank 1
  // sends up, rank 0 sends back down, and each host's bucket refills while the other sends,
  // so a call takes about one transfer at the rate (plus latency); the plain model counts
  // two shaped transfers.
  CostParams params;
  params.inter_alpha = kAlpha;
  params.inter_beta = kBeta;
  const Measurement measured{"tree", 16384, 2, true, kAlpha + 16384 * kBeta};
  const LinkShaping shaping{kBucket, kLineBeta};
  const auto shaped = validate({measured}, params, 1, size_t{1} << 19, shaping);
  ASSERT_EQ(shaped.size(), 1u);
  EXPECT_TRUE(shaped[0].steady) << "the buckets did not settle within the validation's calls";
  EXPECT_LT(std::abs(shaped[0].relative_error), 0.1)
      << "shaped prediction " << shaped[0].predicted_seconds << " s vs rate bound " << measured.seconds << " s";
  const auto plain = validate({measured}, params, 1);
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_GT(plain[0].relative_error, 0.8) << "the plain model should count both shaped transfers";
  EXPECT_THROW(validate({measured}, params, 1, size_t{1} << 19, LinkShaping{kBucket, 0}), InvalidArgument);
  EXPECT_THROW(validate({measured}, params, 0, size_t{1} << 19, shaping), InvalidArgument)
      << "token buckets on a single node (no inter-node link) must be refused";
}

TEST(SimTokenBucket, ValidationPassesTheGapToTheInterNodeLinks) {
  // A 4-byte tree at P = 4 (0 -> 2 -> {1, 3}): its middle rank receives from two children
  // and sends to two. When all of alpha occupies a link those messages queue (6 alpha);
  // with a zero gap only the 4 hops of the tree's height count.
  CostParams params;
  params.inter_alpha = kAlpha;
  params.inter_beta = kBeta;
  const Measurement measured{"tree", 4, 4, true, 4 * kAlpha};
  LinkShaping shaping{kBucket, kLineBeta};
  const auto whole = validate({measured}, params, 1, size_t{1} << 19, shaping);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_NEAR(whole[0].predicted_seconds, 6 * kAlpha, 0.01 * kAlpha);
  shaping.gap = 0;
  const auto overlapped = validate({measured}, params, 1, size_t{1} << 19, shaping);
  ASSERT_EQ(overlapped.size(), 1u);
  EXPECT_NEAR(overlapped[0].predicted_seconds, 4 * kAlpha, 0.01 * kAlpha);
  shaping.gap = kAlpha / 4;  // the middle rank's second message waits one gap each way
  EXPECT_NEAR(validate({measured}, params, 1, size_t{1} << 19, shaping)[0].predicted_seconds, 4.5 * kAlpha,
              0.01 * kAlpha);
  const auto plain_links = validate({measured}, params, 1, size_t{1} << 19, LinkShaping{0, 0, 0});
  ASSERT_EQ(plain_links.size(), 1u);
  EXPECT_EQ(plain_links[0].method, Method::kStepByStep) << "a gap must be simulated, not priced in closed form";
  // 4 hops of latency, plus the 4-byte transfers at the shaped rate: 4 along the height and
  // one more each way at the middle rank, whose two children's messages share its link.
  EXPECT_NEAR(plain_links[0].predicted_seconds, 4 * kAlpha + 6 * 4 * kBeta, 1e-9)
      << "without a bucket, a zero gap still leaves the tree's 4 hops";
  EXPECT_THROW(validate({measured}, params, 0, size_t{1} << 19, LinkShaping{0, 0, 0}), InvalidArgument)
      << "a gap on a single node (no inter-node link) must be refused";
}

}  // namespace
}  // namespace concord::sim
