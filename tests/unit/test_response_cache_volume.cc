// Horovod's response cache (Sergeev & Del Balso, 2018; the bit-vector coordination of
// Romero et al., NSDI 2022; src/control/negotiator.h): once every tensor of a training loop
// is cached, an iteration costs the coordinator (rank 0) one allreduce of a bit vector whose
// size depends on the cache capacity, not on the number of ranks: the bytes it puts through
// the control transport per iteration are the same at P = 2 .. 16. Without the cache every
// iteration gathers every rank's requests to rank 0, and those bytes grow with P. Counted
// by a TransportLog around the control communicator (tests/test_support/negotiation_volume.h);
// nothing is timed.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "rank_runner.h"
#include "test_support/negotiation_volume.h"

namespace concord {
namespace {

using testing_util::IterationVolume;
using testing_util::negotiation_volume;
using testing_util::run_ranks;

constexpr int kTensors = 40;
constexpr int kIterations = 6;
const std::vector<int> kRanks = {2, 3, 4, 8, 16};

/// Rank 0's volume per iteration on P in-process ranks.
std::vector<IterationVolume> coordinator_volume(int P, uint32_t capacity) {
  std::vector<IterationVolume> volumes;
  const std::string error = run_ranks(P, [&](Communicator& comm, const testing_util::AbortFlag&) {
    auto mine = negotiation_volume(comm, capacity, kTensors, kIterations);
    if (comm.rank() == 0) volumes = std::move(mine);
  });
  EXPECT_EQ(error, "") << "P=" << P << " capacity " << capacity;
  return volumes;
}

// Cached: from the second iteration on, one cycle per iteration on the fast path (no gather,
// no broadcast), every response from the cache, and exactly the bytes of one AND-allreduce of
// 1 + capacity/64 words (in and back) at rank 0, whatever P.
TEST(ResponseCacheVolume, HorovodCacheKeepsCoordinatorBytesPerIterationConstantFrom2To16Ranks) {
  constexpr uint32_t kCapacity = 1024;
  constexpr uint64_t kBitVectorBytes = (1 + kCapacity / 64) * sizeof(uint64_t);
  for (const int P : kRanks) {
    const auto volumes = coordinator_volume(P, kCapacity);
    ASSERT_EQ(volumes.size(), size_t{kIterations}) << "P=" << P;
    EXPECT_GT(volumes[0].gathers, 0) << "P=" << P << ": the first iteration goes to the coordinator";
    for (int it = 1; it < kIterations; ++it) {
      const IterationVolume& v = volumes[it];
      const std::string where = "P=" + std::to_string(P) + ", iteration " + std::to_string(it);
      EXPECT_EQ(v.cycles, 1) << where;
      EXPECT_EQ(v.gathers, 0) << where << ": a cached iteration gathered to the coordinator";
      EXPECT_EQ(v.broadcasts, 0) << where << ": a cached iteration broadcast from the coordinator";
      EXPECT_EQ(v.cache_hits, uint64_t{kTensors}) << where;
      EXPECT_EQ(v.bytes, 2 * kBitVectorBytes) << where << ": coordinator bytes through the control transport";
    }
  }
}

// The control: with the cache off the coordinator's bytes per iteration grow with P (it
// gathers every rank's request list), so the constant above is the cache's doing.
TEST(ResponseCacheVolume, WithoutTheCacheCoordinatorBytesGrowWithRanks) {
  std::map<int, uint64_t> bytes;
  for (const int P : kRanks) {
    const auto volumes = coordinator_volume(P, 0);
    ASSERT_EQ(volumes.size(), size_t{kIterations}) << "P=" << P;
    EXPECT_GT(volumes.back().gathers, 0) << "P=" << P << ": uncached iterations need the coordinator";
    bytes[P] = volumes.back().bytes;
  }
  for (size_t i = 1; i < kRanks.size(); ++i)
    EXPECT_GT(bytes[kRanks[i]], bytes[kRanks[i - 1]])
        << "coordinator bytes per uncached iteration: " << bytes[kRanks[i - 1]] << " at P=" << kRanks[i - 1] << ", "
        << bytes[kRanks[i]] << " at P=" << kRanks[i];
}

}  // namespace
}  // namespace concord
