// The wake-up logic of idle ranks on the in-process transport (no fixed cycle time):
// WakeChannel (src/control/wake_channel.h) delivers a round announcement to every other
// rank and drops stale ones; Negotiator::idle() is the same on every rank and true exactly
// after a round that made no progress anywhere.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "control/negotiator.h"
#include "control/wake_channel.h"
#include "transport/inprocess_communicator.h"

namespace concord {
namespace {

// Polls `wake` for `round` until it says so or 10 s pass.
bool woken_within_limit(WakeChannel& wake, uint64_t round) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (wake.poll(round)) return true;
    std::this_thread::yield();
  }
  return false;
}

class WakeRanks : public ::testing::TestWithParam<int> {};

TEST_P(WakeRanks, AnnouncementsReachEveryRankAndStaleOnesAreDropped) {
  const int size = GetParam();
  constexpr uint64_t kRounds = 6;
  InProcessWorld::run(size, [&](Communicator& comm) {
    WakeChannel wake(comm);
    const int rank = comm.rank();
    for (uint64_t round = 0; round < kRounds; ++round) {
      // Two ranks announce the same round (as when two ranks get work at once).
      const int first = static_cast<int>(round % size), second = static_cast<int>((round + 1) % size);
      if (rank == first || rank == second) wake.announce(round);
      else
        EXPECT_TRUE(woken_within_limit(wake, round)) << "rank " << rank << " of " << size << ", round " << round
                                                     << ": announcement by ranks " << first << ", " << second;
      comm.barrier();
      // Everything of this round has been delivered: the next round is not announced yet.
      EXPECT_FALSE(wake.poll(round + 1)) << "rank " << rank << " of " << size << ", round " << round + 1
                                         << ": a stale announcement of round " << round << " woke it";
      comm.barrier();
    }
    wake.drain();
  });
}

Request request(int rank, const std::string& name) {
  Request r;
  r.rank = rank;
  r.name = name;
  r.shape = {4};
  return r;
}

TEST_P(WakeRanks, NegotiatorIsIdleExactlyAfterARoundWithoutProgress) {
  const int size = GetParam();
  // idle() after each round, per rank: round 0 empty; round 1 only rank 0 submits "a"
  // (uncached: progress, it goes to the coordinator); round 2 nothing new; round 3 every
  // other rank submits "a" (answered); round 4 nothing; round 5 every rank submits "a"
  // again (cache hit, answered); round 6 nothing.
  const std::vector<bool> expected = {true, false, true, size == 1 ? true : false, true, false, true};
  std::vector<std::vector<bool>> idle(size);
  InProcessWorld::run(size, [&](Communicator& comm) {
    Negotiator negotiator(comm, NegotiatorOptions{});
    const int rank = comm.rank();
    EXPECT_TRUE(negotiator.idle()) << "rank " << rank << ": before the first round";
    for (size_t round = 0; round < expected.size(); ++round) {
      std::vector<Request> mine;
      if ((round == 1 && rank == 0) || (round == 3 && rank != 0) || round == 5) mine.push_back(request(rank, "a"));
      negotiator.negotiate(mine, false);
      idle[rank].push_back(negotiator.idle());
    }
    negotiator.finish();
  });
  for (int rank = 0; rank < size; ++rank)
    for (size_t round = 0; round < expected.size(); ++round)
      EXPECT_EQ(idle[rank][round], expected[round])
          << "rank " << rank << " of " << size << ", idle() after round " << round;
}

INSTANTIATE_TEST_SUITE_P(Ranks, WakeRanks, ::testing::Values(1, 2, 3, 5, 8, 16),
                         [](const auto& info) { return std::string("P") += std::to_string(info.param); });

}  // namespace
}  // namespace concord
