// The coordinator's message table (src/control/coordinator.h): a tensor is ready once every
// rank has requested it, responses come in the order tensors became ready, and any
// disagreement between ranks becomes an ERROR response naming the tensor, every rank and
// every differing value.
#include <gtest/gtest.h>

#include "concord/errors.h"
#include "control/coordinator.h"

namespace concord {
namespace {

Request allreduce(int rank, const std::string& name, std::vector<int64_t> shape = {3},
                  DataType dtype = DataType::kFloat32, ReduceOp op = ReduceOp::kSum) {
  Request r;
  r.rank = rank;
  r.name = name;
  r.type = CollectiveType::kAllreduce;
  r.dtype = dtype;
  r.op = op;
  r.shape = std::move(shape);
  return r;
}

Request of_type(CollectiveType type, int rank, const std::string& name, std::vector<int64_t> shape) {
  Request r = allreduce(rank, name, std::move(shape));
  r.type = type;
  return r;
}

std::vector<std::string> names_of(const std::vector<Response>& responses) {
  std::vector<std::string> names;
  for (const auto& response : responses) names.insert(names.end(), response.names.begin(), response.names.end());
  return names;
}

// build_response over one request per rank (index = rank) that differ only by `change`.
template <typename Change>
Response with_ranks_changed(int size, std::initializer_list<int> changed_ranks, Change change,
                            CollectiveType type = CollectiveType::kAllreduce) {
  std::vector<Request> requests;
  for (int r = 0; r < size; ++r) {
    Request request = of_type(type, r, "x", {3});
    for (int c : changed_ranks)
      if (c == r) change(request);
    requests.push_back(request);
  }
  return build_response(requests);
}

void expect_error(const Response& response, const std::string& message) {
  EXPECT_EQ(response.type, ResponseType::kError) << response.error;
  EXPECT_EQ(response.names, std::vector<std::string>{"x"});
  EXPECT_EQ(response.error, message);
}

TEST(Coordinator, SingleRankIsReadyAtOnce) {
  Coordinator coordinator(1);
  coordinator.add(allreduce(0, "g", {2, 5}, DataType::kFloat64, ReduceOp::kMax));
  EXPECT_EQ(coordinator.pending(), 0u);
  const auto responses = coordinator.take_ready();
  ASSERT_EQ(responses.size(), 1u);
  const Response& r = responses[0];
  EXPECT_EQ(r.type, ResponseType::kAllreduce);
  EXPECT_EQ(r.names, std::vector<std::string>{"g"});
  EXPECT_EQ(r.dtype, DataType::kFloat64);
  EXPECT_EQ(r.op, ReduceOp::kMax);
  EXPECT_EQ(r.sizes, std::vector<int64_t>{10});
  EXPECT_TRUE(r.error.empty());
}

TEST(Coordinator, ReadyOnlyWhenEveryRankRequested) {
  Coordinator coordinator(4);
  for (int rank : {2, 0, 3}) {
    coordinator.add(allreduce(rank, "g"));
    EXPECT_TRUE(coordinator.take_ready().empty()) << "ready after rank " << rank << " alone";
    EXPECT_EQ(coordinator.pending(), 1u);
  }
  coordinator.add(allreduce(1, "g"));
  EXPECT_EQ(coordinator.pending(), 0u);
  EXPECT_EQ(names_of(coordinator.take_ready()), std::vector<std::string>{"g"});
  EXPECT_TRUE(coordinator.take_ready().empty()) << "a taken response must be forgotten";
}

TEST(Coordinator, ReadyOrderIsTheOrderTensorsBecameReady) {
  Coordinator coordinator(3);
  // Each rank submits a, b, c, d in a different order; the last submission decides.
  coordinator.add(allreduce(0, "a"));
  coordinator.add(allreduce(0, "b"));
  coordinator.add(allreduce(0, "c"));
  coordinator.add(allreduce(0, "d"));
  coordinator.add(allreduce(1, "d"));
  coordinator.add(allreduce(1, "c"));
  coordinator.add(allreduce(1, "b"));
  coordinator.add(allreduce(1, "a"));
  coordinator.add(allreduce(2, "c"));  // c ready
  coordinator.add(allreduce(2, "a"));  // a ready
  coordinator.add(allreduce(2, "d"));  // d ready
  EXPECT_EQ(coordinator.pending(), 1u);
  EXPECT_EQ(names_of(coordinator.take_ready()), (std::vector<std::string>{"c", "a", "d"}));
  coordinator.add(allreduce(2, "b"));
  EXPECT_EQ(names_of(coordinator.take_ready()), std::vector<std::string>{"b"});
  EXPECT_EQ(coordinator.pending(), 0u);
}

TEST(Coordinator, NameCanBeRequestedAgainAfterItWasAnswered) {
  Coordinator coordinator(2);
  for (int iteration = 0; iteration < 3; ++iteration) {
    coordinator.add(allreduce(1, "g", {iteration + 1}));
    EXPECT_TRUE(coordinator.take_ready().empty()) << "iteration " << iteration;
    coordinator.add(allreduce(0, "g", {iteration + 1}));
    const auto responses = coordinator.take_ready();
    ASSERT_EQ(responses.size(), 1u) << "iteration " << iteration;
    EXPECT_EQ(responses[0].type, ResponseType::kAllreduce) << responses[0].error;
    EXPECT_EQ(responses[0].sizes, std::vector<int64_t>{iteration + 1});
  }
}

TEST(Coordinator, DuplicateSubmissionByOneRankIsAnErrorForThatTensor) {
  Coordinator coordinator(2);
  coordinator.add(allreduce(0, "x"));
  coordinator.add(allreduce(0, "x"));
  coordinator.add(allreduce(0, "other"));
  EXPECT_TRUE(coordinator.take_ready().empty()) << "rank 1 has not submitted yet";
  coordinator.add(allreduce(1, "x"));
  coordinator.add(allreduce(1, "other"));
  const auto responses = coordinator.take_ready();
  ASSERT_EQ(responses.size(), 2u);
  EXPECT_EQ(responses[0].type, ResponseType::kError);
  EXPECT_EQ(responses[0].names, std::vector<std::string>{"x"});
  EXPECT_NE(responses[0].error.find("'x'"), std::string::npos) << responses[0].error;
  EXPECT_NE(responses[0].error.find("twice by rank 0"), std::string::npos) << responses[0].error;
  EXPECT_EQ(responses[1].type, ResponseType::kAllreduce) << "other tensors are unaffected";
}

TEST(Coordinator, MismatchArrivingThroughAddBecomesErrorResponse) {
  Coordinator coordinator(3);
  coordinator.add(allreduce(2, "x", {3}));
  coordinator.add(allreduce(1, "x", {4}));
  coordinator.add(allreduce(0, "x", {3}));
  const auto responses = coordinator.take_ready();
  ASSERT_EQ(responses.size(), 1u);
  expect_error(responses[0], "Mismatched shape for tensor 'x': [3] on ranks [0, 2], [4] on ranks [1]");
}

// On a process set, messages name GLOBAL ranks (and broadcast roots) and the set.
TEST(Coordinator, ProcessSetMessagesNameGlobalRanksAndTheSet) {
  const RankNames names{{1, 4, 6}, " in process set 2 (ranks [1, 4, 6])"};
  Coordinator coordinator(3, names);
  coordinator.add(allreduce(2, "x", {3}));
  coordinator.add(allreduce(1, "x", {4}));
  coordinator.add(allreduce(0, "x", {3}));
  coordinator.add(allreduce(0, "twice"));
  coordinator.add(allreduce(0, "twice"));
  coordinator.add(allreduce(1, "twice"));
  coordinator.add(allreduce(2, "twice"));
  const auto responses = coordinator.take_ready();
  ASSERT_EQ(responses.size(), 2u);
  expect_error(responses[0],
               "Mismatched shape for tensor 'x': [3] on ranks [1, 6], [4] on ranks [4] in process "
               "set 2 (ranks [1, 4, 6])");
  EXPECT_NE(responses[1].error.find("twice by rank 1 before every rank had submitted it in process set 2"),
            std::string::npos)
      << responses[1].error;
  std::vector<Request> roots;
  for (int r = 0; r < 3; ++r) {
    roots.push_back(of_type(CollectiveType::kBroadcast, r, "x", {3}));
    roots.back().root = r == 2 ? 2 : 0;  // set-relative, as the runtime translates them
  }
  expect_error(build_response(roots, 3, {}, names),
               "Mismatched root rank for tensor 'x': 1 on ranks [1, 4], 6 on ranks [6] in process set 2 (ranks "
               "[1, 4, 6])");
}

// A process set formed by its members: ready once the members it names have requested it,
// whatever the other ranks do; members naming different ranks get an error that still
// says it is a formed set's (so non-members apply it without having sent it).
Request formed_set(int rank, std::vector<int64_t> members) {
  Request r = of_type(CollectiveType::kProcessSet, rank, "concord.process_set.formed.g", {});
  r.splits = std::move(members);
  r.root = kFormedByMembers;
  return r;
}

TEST(Coordinator, SetFormedByItsMembersIsReadyWithoutTheOtherRanks) {
  Coordinator coordinator(4);
  coordinator.add(formed_set(2, {1, 2}));
  EXPECT_TRUE(coordinator.take_ready().empty()) << "ready before member 1 requested it";
  coordinator.add(formed_set(1, {1, 2}));
  const auto ready = coordinator.take_ready();
  ASSERT_EQ(ready.size(), 1u) << "ranks 0 and 3 never request it";
  EXPECT_EQ(ready[0].type, ResponseType::kProcessSet);
  EXPECT_EQ(ready[0].sizes, (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(formed_by_members(ready[0]));
}

TEST(Coordinator, MembersNamingDifferentRanksGetAnErrorMarkedFormed) {
  Coordinator coordinator(4);
  coordinator.add(formed_set(1, {1, 2}));
  coordinator.add(formed_set(2, {1, 2, 3}));
  const auto ready = coordinator.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].type, ResponseType::kError);
  EXPECT_TRUE(formed_by_members(ready[0]));
  EXPECT_NE(ready[0].error.find("process set ranks"), std::string::npos) << ready[0].error;
}

TEST(Coordinator, RankOutsideTheWorldIsInternalError) {
  Coordinator coordinator(2);
  EXPECT_THROW(coordinator.add(allreduce(2, "x")), InternalError);
  EXPECT_THROW(coordinator.add(allreduce(-1, "x")), InternalError);
  EXPECT_EQ(coordinator.pending(), 0u);
}

TEST(BuildResponse, NoRequestsIsInternalError) { EXPECT_THROW(build_response({}), InternalError); }

TEST(BuildResponse, AllreduceCarriesParametersAndElementCount) {
  std::vector<Request> requests;
  for (int r = 0; r < 3; ++r) {
    Request request = allreduce(r, "w", {4, 5}, DataType::kBFloat16, ReduceOp::kAverage);
    request.prescale_factor = 0.5;
    request.postscale_factor = 4.0;
    request.root = 7 + r;  // root is a broadcast parameter: ignored for an allreduce
    requests.push_back(request);
  }
  const Response r = build_response(requests);
  ASSERT_EQ(r.type, ResponseType::kAllreduce) << r.error;
  EXPECT_EQ(r.names, std::vector<std::string>{"w"});
  EXPECT_EQ(r.dtype, DataType::kBFloat16);
  EXPECT_EQ(r.op, ReduceOp::kAverage);
  EXPECT_EQ(r.prescale_factor, 0.5);
  EXPECT_EQ(r.postscale_factor, 4.0);
  EXPECT_EQ(r.sizes, std::vector<int64_t>{20});
}

TEST(BuildResponse, ScalarAndEmptyShapes) {
  EXPECT_EQ(build_response({allreduce(0, "s", {}), allreduce(1, "s", {})}).sizes, std::vector<int64_t>{1});
  EXPECT_EQ(build_response({allreduce(0, "e", {3, 0}), allreduce(1, "e", {3, 0})}).sizes, std::vector<int64_t>{0});
}

TEST(BuildResponse, BroadcastCarriesRootAndIgnoresReduceParameters) {
  std::vector<Request> requests;
  for (int r = 0; r < 4; ++r) {
    Request request = of_type(CollectiveType::kBroadcast, r, "b", {2, 3});
    request.root = 2;
    request.op = static_cast<ReduceOp>(r % 5);  // allreduce-only fields may differ
    request.prescale_factor = r;
    requests.push_back(request);
  }
  const Response r = build_response(requests);
  ASSERT_EQ(r.type, ResponseType::kBroadcast) << r.error;
  EXPECT_EQ(r.root, 2);
  EXPECT_EQ(r.sizes, std::vector<int64_t>{6});
}

TEST(BuildResponse, AllgatherAcceptsDifferentDim0AndReportsItPerRank) {
  std::vector<Request> requests;
  const int64_t dim0[] = {5, 0, 1, 3};
  for (int r = 0; r < 4; ++r) {
    Request request = of_type(CollectiveType::kAllgather, r, "g", {dim0[r], 2, 3});
    request.op = static_cast<ReduceOp>(r % 5);  // ignored for allgather
    request.postscale_factor = r + 1;
    requests.push_back(request);
  }
  const Response r = build_response(requests);
  ASSERT_EQ(r.type, ResponseType::kAllgather) << r.error;
  EXPECT_EQ(r.sizes, (std::vector<int64_t>{5, 0, 1, 3}));
}

TEST(BuildResponse, AllgatherMismatchBeyondDim0) {
  const Response r = build_response({of_type(CollectiveType::kAllgather, 0, "x", {2, 3}),
                                     of_type(CollectiveType::kAllgather, 1, "x", {2, 4}),
                                     of_type(CollectiveType::kAllgather, 2, "x", {9, 3})});
  expect_error(r, "Mismatched shape (all but dim 0) for tensor 'x': [3] on ranks [0, 2], [4] on ranks [1]");
}

TEST(BuildResponse, ShapeMismatchNamesTensorRanksAndBothShapes) {
  expect_error(with_ranks_changed(3, {1}, [](Request& r) { r.shape = {4}; }),
               "Mismatched shape for tensor 'x': [3] on ranks [0, 2], [4] on ranks [1]");
  // Same element count, different shape: still a mismatch.
  expect_error(with_ranks_changed(2, {0},
                                  [](Request& r) {
                                    r.shape = {1, 3};
                                  }),
               "Mismatched shape for tensor 'x': [1, 3] on ranks [0], [3] on ranks [1]");
  expect_error(with_ranks_changed(
                   4, {1, 3}, [](Request& r) { r.shape = {4}; }, CollectiveType::kBroadcast),
               "Mismatched shape for tensor 'x': [3] on ranks [0, 2], [4] on ranks [1, 3]");
}

TEST(BuildResponse, DtypeMismatch) {
  expect_error(with_ranks_changed(3, {2}, [](Request& r) { r.dtype = DataType::kFloat16; }),
               "Mismatched dtype for tensor 'x': float32 on ranks [0, 1], float16 on ranks [2]");
  expect_error(with_ranks_changed(
                   2, {1}, [](Request& r) { r.dtype = DataType::kInt64; }, CollectiveType::kAllgather),
               "Mismatched dtype for tensor 'x': float32 on ranks [0], int64 on ranks [1]");
}

// Host memory on some ranks and device memory on others is a mismatch naming both; device
// names alone may differ (one GPU per rank), and the response is then a device response.
TEST(BuildResponse, DeviceMismatchNamesHostAndDeviceRanks) {
  expect_error(with_ranks_changed(4, {1, 3}, [](Request& r) { r.device = "cuda:" + std::to_string(r.rank); }),
               "Mismatched device for tensor 'x': cpu on ranks [0, 2], cuda:1 on ranks [1], cuda:3 on ranks [3]");
  expect_error(with_ranks_changed(
                   2, {0}, [](Request& r) { r.device = "emulated:0"; }, CollectiveType::kBroadcast),
               "Mismatched device for tensor 'x': emulated:0 on ranks [0], cpu on ranks [1]");
  const Response on_gpus =
      with_ranks_changed(3, {0, 1, 2}, [](Request& r) { r.device = "cuda:" + std::to_string(r.rank); });
  EXPECT_EQ(on_gpus.type, ResponseType::kAllreduce) << on_gpus.error;
  EXPECT_TRUE(on_gpus.device);
  EXPECT_FALSE(with_ranks_changed(2, {}, [](Request&) {}).device);
}

TEST(BuildResponse, ReduceOpMismatch) {
  expect_error(with_ranks_changed(2, {1}, [](Request& r) { r.op = ReduceOp::kMax; }),
               "Mismatched reduce op for tensor 'x': sum on ranks [0], max on ranks [1]");
}

TEST(BuildResponse, ScaleFactorMismatches) {
  expect_error(with_ranks_changed(3, {0}, [](Request& r) { r.prescale_factor = 0.25; }),
               "Mismatched prescale factor for tensor 'x': 0.25 on ranks [0], 1 on ranks [1, 2]");
  expect_error(with_ranks_changed(2, {1}, [](Request& r) { r.postscale_factor = 0.5; }),
               "Mismatched postscale factor for tensor 'x': 1 on ranks [0], 0.5 on ranks [1]");
  // Factors that differ only in the last bit are still reported, with enough digits to
  // tell them apart.
  const Response r = with_ranks_changed(2, {1}, [](Request& q) { q.prescale_factor = 1.0000000000000002; });
  expect_error(r, "Mismatched prescale factor for tensor 'x': 1 on ranks [0], 1.0000000000000002 on ranks [1]");
}

TEST(BuildResponse, RootMismatch) {
  expect_error(with_ranks_changed(
                   3, {2}, [](Request& r) { r.root = 2; }, CollectiveType::kBroadcast),
               "Mismatched root rank for tensor 'x': 0 on ranks [0, 1], 2 on ranks [2]");
}

TEST(BuildResponse, CollectiveMismatch) {
  expect_error(with_ranks_changed(2, {1}, [](Request& r) { r.type = CollectiveType::kBroadcast; }),
               "Mismatched collective for tensor 'x': allreduce on ranks [0], broadcast on ranks [1]");
}

TEST(BuildResponse, ThreeDifferentValuesAreAllListedInOrderOfFirstRank) {
  std::vector<Request> requests;
  const int64_t dims[] = {7, 5, 7, 6, 5};
  for (int r = 0; r < 5; ++r) requests.push_back(allreduce(r, "x", {dims[r]}));
  expect_error(build_response(requests),
               "Mismatched shape for tensor 'x': [7] on ranks [0, 2], [5] on ranks [1, 4], [6] on ranks [3]");
}

TEST(BuildResponse, OnlyOneMismatchIsReportedTheCollectiveFirst) {
  const Response r = with_ranks_changed(2, {1}, [](Request& q) {
    q.type = CollectiveType::kAllgather;
    q.dtype = DataType::kInt8;
    q.shape = {9};
  });
  expect_error(r, "Mismatched collective for tensor 'x': allreduce on ranks [0], allgather on ranks [1]");
}

}  // namespace
}  // namespace concord
