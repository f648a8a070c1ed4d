// The coordinator's new collectives and join (src/control/coordinator.h): reduce-scatter and
// alltoall responses carry rows, row elements and the split matrix; mismatches name the
// tensor, the ranks and the values; a joined rank's tensors are ready without it, allgather
// gives it no rows, and the kJoin response comes once every rank has joined, naming the
// last one. Negotiator-level: a joined rank lets its peers' cached tensors through.
#include <gtest/gtest.h>

#include <algorithm>

#include "control/coordinator.h"
#include "control/negotiator.h"
#include "transport/inprocess_communicator.h"

namespace concord {
namespace {

Request make(CollectiveType type, int rank, const std::string& name, std::vector<int64_t> shape) {
  Request r;
  r.rank = rank;
  r.name = name;
  r.type = type;
  r.shape = std::move(shape);
  return r;
}

Request join(int rank) { return make(CollectiveType::kJoin, rank, "concord.join", {}); }

TEST(CoordinatorCollectives, ReducescatterCarriesRowsAndRowElements) {
  std::vector<Request> requests;
  for (int r = 0; r < 3; ++r) requests.push_back(make(CollectiveType::kReducescatter, r, "rs", {7, 2, 3}));
  const Response response = build_response(requests);
  EXPECT_EQ(response.type, ResponseType::kReducescatter) << response.error;
  EXPECT_EQ(response.sizes, std::vector<int64_t>{42});
  EXPECT_EQ(response.rows, std::vector<int64_t>{7});
  EXPECT_EQ(response.row_elements, std::vector<int64_t>{6});
}

TEST(CoordinatorCollectives, ReducescatterOpMismatchNamesRanksAndValues) {
  std::vector<Request> requests;
  for (int r = 0; r < 3; ++r) {
    requests.push_back(make(CollectiveType::kReducescatter, r, "rs", {4}));
    requests.back().op = r == 1 ? ReduceOp::kAverage : ReduceOp::kSum;
  }
  EXPECT_EQ(build_response(requests).error,
            "Mismatched reduce op for tensor 'rs': sum on ranks [0, 2], average on ranks [1]");
}

TEST(CoordinatorCollectives, AlltoallSplitMatrixAndTrailingDimMismatch) {
  std::vector<Request> requests;
  for (int r = 0; r < 3; ++r) {
    requests.push_back(make(CollectiveType::kAlltoall, r, "a", {r + 3, 5}));
    requests.back().splits = {r, 1, 2};
  }
  Response response = build_response(requests);
  EXPECT_EQ(response.type, ResponseType::kAlltoall) << response.error;
  EXPECT_EQ(response.sizes, (std::vector<int64_t>{0, 1, 2, 1, 1, 2, 2, 1, 2}));
  EXPECT_EQ(response.row_elements, std::vector<int64_t>{5});
  requests[2].shape = {5, 4};
  EXPECT_EQ(build_response(requests).error,
            "Mismatched shape (all but dim 0) for tensor 'a': [5] on ranks [0, 1], [4] on ranks [2]");
}

TEST(CoordinatorJoin, JoinedRankIsNotWaitedForAndGathersNoRows) {
  Coordinator coordinator(3);
  coordinator.add(join(2));
  EXPECT_EQ(coordinator.joined(), std::vector<int32_t>{2});
  coordinator.add(make(CollectiveType::kAllgather, 0, "g", {2, 4}));
  EXPECT_TRUE(coordinator.take_ready().empty());
  coordinator.add(make(CollectiveType::kAllgather, 1, "g", {3, 4}));
  const auto ready = coordinator.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].type, ResponseType::kAllgather) << ready[0].error;
  EXPECT_EQ(ready[0].sizes, (std::vector<int64_t>{2, 3, 0}));
  EXPECT_EQ(ready[0].joined, std::vector<int32_t>{2});
}

TEST(CoordinatorJoin, LateJoinReleasesTensorsWaitingForTheJoiningRank) {
  Coordinator coordinator(3);
  coordinator.add(make(CollectiveType::kAllreduce, 0, "x", {3}));
  coordinator.add(make(CollectiveType::kAllreduce, 1, "x", {3}));
  coordinator.add(make(CollectiveType::kAllreduce, 0, "y", {1}));
  coordinator.add(make(CollectiveType::kAllreduce, 1, "y", {1}));
  EXPECT_TRUE(coordinator.take_ready().empty());
  coordinator.add(join(2));
  const auto ready = coordinator.take_ready();
  ASSERT_EQ(ready.size(), 2u);
  EXPECT_EQ(ready[0].names[0], "x");
  EXPECT_EQ(ready[1].names[0], "y");
  EXPECT_EQ(ready[1].joined, std::vector<int32_t>{2});
}

TEST(CoordinatorJoin, JoinResponseNamesTheLastRankAndResets) {
  Coordinator coordinator(3);
  coordinator.add(join(1));
  coordinator.add(join(0));
  EXPECT_TRUE(coordinator.take_ready().empty());
  coordinator.add(make(CollectiveType::kAllreduce, 2, "z", {1}));
  coordinator.add(join(2));
  const auto ready = coordinator.take_ready();
  ASSERT_EQ(ready.size(), 2u) << "z (ready without ranks 0, 1), then the join";
  EXPECT_EQ(ready[0].names[0], "z");
  EXPECT_EQ(ready[0].joined, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(ready[1].type, ResponseType::kJoin);
  EXPECT_EQ(ready[1].sizes, std::vector<int64_t>{2});
  EXPECT_TRUE(coordinator.joined().empty());
  coordinator.add(make(CollectiveType::kAllreduce, 0, "w", {1}));
  EXPECT_TRUE(coordinator.take_ready().empty()) << "after the join every rank is waited for again";
}

TEST(CoordinatorJoin, GroupWaitsForAllMembersEvenWhenReadyThroughJoin) {
  Coordinator coordinator(2);
  for (const char* name : {"g.0", "g.1"}) {
    Request r = make(CollectiveType::kAllreduce, 0, name, {2});
    r.group = "g.0";
    r.group_size = 2;
    if (std::string(name) == "g.0") coordinator.add(r);
    else coordinator.add(r);
  }
  EXPECT_TRUE(coordinator.take_ready().empty());
  coordinator.add(join(1));
  const auto ready = coordinator.take_ready();
  ASSERT_EQ(ready.size(), 2u);
  EXPECT_EQ(ready[0].group, "g.0");
  EXPECT_EQ(ready[1].group, "g.0");
}

// Three ranks negotiate "t" until it is cached; then rank 2 joins and ranks 0 and 1 submit
// "t" again: it must come back through the cache (no coordinator round for it) with
// joined = {2} on every rank, and the join completes once ranks 0 and 1 join too.
TEST(NegotiatorJoin, JoinedRankLetsCachedTensorsThrough) {
  constexpr int kSize = 3;
  std::vector<std::vector<Response>> executed(kSize);
  InProcessWorld::run(kSize, [&](Communicator& comm) {
    Negotiator negotiator(comm, NegotiatorOptions{64});
    const int rank = comm.rank();
    auto run_until = [&](std::vector<Request> mine, auto done) {
      for (int cycle = 0; cycle < 50; ++cycle) {
        for (const auto& response : negotiator.negotiate(std::exchange(mine, {}), false).responses)
          executed[rank].push_back(response);
        if (done()) return;
      }
      FAIL() << "rank " << rank << ": not done after 50 cycles";
    };
    auto count = [&](ResponseType type) {
      return std::count_if(executed[rank].begin(), executed[rank].end(),
                           [&](const Response& r) { return r.type == type; });
    };
    run_until({make(CollectiveType::kAllreduce, rank, "t", {4})}, [&] { return count(ResponseType::kAllreduce) == 1; });
    std::vector<Request> second;
    if (rank == 2) second.push_back(join(2));
    else second.push_back(make(CollectiveType::kAllreduce, rank, "t", {4}));
    run_until(second, [&] { return count(ResponseType::kAllreduce) == 2; });
    run_until(rank == 2 ? std::vector<Request>{} : std::vector<Request>{join(rank)},
              [&] { return count(ResponseType::kJoin) == 1; });
  });
  for (int rank = 0; rank < kSize; ++rank) {
    ASSERT_EQ(executed[rank].size(), 3u) << "rank " << rank;
    EXPECT_EQ(executed[rank][1].names[0], "t");
    EXPECT_EQ(executed[rank][1].joined, std::vector<int32_t>{2}) << "rank " << rank;
    EXPECT_EQ(executed[rank][2].type, ResponseType::kJoin);
    EXPECT_EQ(executed[rank][2].sizes.size(), 1u);
  }
}

}  // namespace
}  // namespace concord
