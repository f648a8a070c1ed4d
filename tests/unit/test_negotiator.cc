// One negotiation round over the in-process transport (src/control/negotiator.h): every rank
// gets the same response list, in the order tensors became ready on the coordinator, even
// when ranks submit in different orders over several cycles.
#include <gtest/gtest.h>

#include <algorithm>

#include "control/negotiator.h"
#include "transport/inprocess_communicator.h"

namespace concord {
namespace {

Request request(int rank, const std::string& name, int64_t elements) {
  Request r;
  r.rank = rank;
  r.name = name;
  r.shape = {elements};
  return r;
}

class NegotiatorCapacity : public ::testing::TestWithParam<uint32_t> {};

TEST_P(NegotiatorCapacity, EveryRankReceivesTheSameResponsesInReadyOrder) {
  constexpr int kSize = 5;
  constexpr int kCycles = 4;
  const std::vector<std::string> tensors = {"t0", "t1", "t2", "t3", "t4", "t5"};
  std::vector<std::vector<ResponseList>> received(kSize);
  InProcessWorld::run(kSize, [&](Communicator& comm) {
    Negotiator negotiator(comm, NegotiatorOptions{GetParam()});
    const int rank = comm.rank();
    // Rank r submits the tensors rotated by r, spread over the cycles: a tensor becomes ready
    // in the cycle in which its last rank submits it.
    std::vector<std::string> order = tensors;
    std::rotate(order.begin(), order.begin() + rank % order.size(), order.end());
    size_t next = 0;
    for (int cycle = 0; cycle < kCycles; ++cycle) {
      RequestList mine;
      const size_t per_cycle = cycle < 2 ? 1 + rank % 2 : order.size();
      for (size_t i = 0; i < per_cycle && next < order.size(); ++i, ++next)
        mine.requests.push_back(request(rank, order[next], 10 + (order[next][1] - '0')));
      received[rank].push_back(negotiator.negotiate(mine.requests, false));
    }
  });
  std::vector<std::string> all_names;
  for (int rank = 0; rank < kSize; ++rank) {
    ASSERT_EQ(received[rank].size(), size_t{kCycles});
    for (int cycle = 0; cycle < kCycles; ++cycle)
      EXPECT_EQ(received[rank][cycle], received[0][cycle]) << "rank " << rank << " cycle " << cycle;
  }
  for (const auto& list : received[0]) {
    EXPECT_FALSE(list.shutdown);
    for (const auto& response : list.responses) {
      EXPECT_EQ(response.type, ResponseType::kAllreduce) << response.error;
      ASSERT_EQ(response.names.size(), 1u);
      EXPECT_EQ(response.sizes, std::vector<int64_t>{10 + (response.names[0][1] - '0')});
      all_names.push_back(response.names[0]);
    }
  }
  std::sort(all_names.begin(), all_names.end());
  EXPECT_EQ(all_names, tensors) << "every tensor answered exactly once";
}

TEST_P(NegotiatorCapacity, MismatchIsTheSameErrorOnEveryRankAndShutdownSpreads) {
  constexpr int kSize = 3;
  std::vector<ResponseList> received(kSize);
  InProcessWorld::run(kSize, [&](Communicator& comm) {
    Negotiator negotiator(comm, NegotiatorOptions{GetParam()});
    const std::vector<Request> mine = {request(comm.rank(), "x", comm.rank() == 1 ? 4 : 3)};
    received[comm.rank()] = negotiator.negotiate(mine, comm.rank() == 2);
  });
  for (int rank = 0; rank < kSize; ++rank) {
    ASSERT_EQ(received[rank].responses.size(), 1u) << "rank " << rank;
    const Response& r = received[rank].responses[0];
    EXPECT_EQ(r.type, ResponseType::kError) << "rank " << rank;
    EXPECT_EQ(r.error, "Mismatched shape for tensor 'x': [3] on ranks [0, 2], [4] on ranks [1]") << "rank " << rank;
    EXPECT_TRUE(received[rank].shutdown) << "rank " << rank << ": rank 2 asked to shut down";
  }
}

INSTANTIATE_TEST_SUITE_P(CacheOnAndOff, NegotiatorCapacity, ::testing::Values(0u, 1024u),
                         [](const auto& info) { return "capacity" + std::to_string(info.param); });

}  // namespace
}  // namespace concord
