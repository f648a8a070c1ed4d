// Tensor fusion planning (src/runtime/fusion.h): compatible allreduces are merged in order up
// to the threshold, never beyond it; everything else passes through unchanged.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "runtime/fusion.h"
#include "test_support/dtype_util.h"

namespace concord {
namespace {

Response allreduce(const std::string& name, int64_t elements, DataType dtype = DataType::kFloat32,
                   ReduceOp op = ReduceOp::kSum, double prescale = 1.0, double postscale = 1.0) {
  Response r;
  r.type = ResponseType::kAllreduce;
  r.names = {name};
  r.dtype = dtype;
  r.op = op;
  r.prescale_factor = prescale;
  r.postscale_factor = postscale;
  r.sizes = {elements};
  return r;
}

Response other(ResponseType type, const std::string& name) {
  Response r;
  r.type = type;
  r.names = {name};
  r.sizes = {4};
  if (type == ResponseType::kError) r.error = "Mismatched shape for tensor '" + name + "'";
  return r;
}

std::vector<std::vector<std::string>> groups(const std::vector<Response>& plan) {
  std::vector<std::vector<std::string>> result;
  for (const auto& r : plan) result.push_back(r.names);
  return result;
}

int64_t bytes_of(const Response& r) {
  int64_t elements = 0;
  for (int64_t n : r.sizes) elements += n;
  return elements * static_cast<int64_t>(dtype_size(r.dtype));
}

using Groups = std::vector<std::vector<std::string>>;

TEST(Fusion, EmptyInputGivesEmptyPlan) { EXPECT_TRUE(plan_fusion({}, 1 << 20).empty()); }

TEST(Fusion, MergesCompatibleAllreducesInOrder) {
  const auto plan = plan_fusion({allreduce("a", 100), allreduce("b", 50), allreduce("c", 1)}, 1 << 20);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].type, ResponseType::kAllreduce);
  EXPECT_EQ(plan[0].names, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(plan[0].sizes, (std::vector<int64_t>{100, 50, 1}));
  EXPECT_EQ(plan[0].dtype, DataType::kFloat32);
}

TEST(Fusion, ThresholdIsInclusive) {
  const std::vector<Response> three = {allreduce("a", 100), allreduce("b", 100), allreduce("c", 100)};
  EXPECT_EQ(groups(plan_fusion(three, 1200)), (Groups{{"a", "b", "c"}})) << "exactly 1200 bytes fits";
  EXPECT_EQ(groups(plan_fusion(three, 1199)), (Groups{{"a", "b"}, {"c"}}));
  EXPECT_EQ(groups(plan_fusion(three, 799)), (Groups{{"a"}, {"b"}, {"c"}}));
}

TEST(Fusion, TensorLargerThanThresholdGoesAlone) {
  EXPECT_EQ(groups(plan_fusion({allreduce("a", 10), allreduce("big", 1000), allreduce("c", 10)}, 400)),
            (Groups{{"a"}, {"big"}, {"c"}}));
}

TEST(Fusion, JoinsOnlyTheMostRecentCompatibleResponse) {
  // c would fit with a, but the most recent compatible response is b, which is full.
  EXPECT_EQ(groups(plan_fusion({allreduce("a", 100), allreduce("b", 300), allreduce("c", 100)}, 1000)),
            (Groups{{"a"}, {"b"}, {"c"}}));
  // ... and a compatible response further back is reached across incompatible ones.
  EXPECT_EQ(groups(plan_fusion({allreduce("a", 10), allreduce("d", 10, DataType::kFloat64), allreduce("c", 10)}, 1000)),
            (Groups{{"a", "c"}, {"d"}}));
}

// Romero et al. (NSDI 2022) section 3.2: a group's members are fused with each other and
// with the other responses ready in the same cycle.
TEST(Fusion, GroupsFuseWithEachOtherAndWithOtherReadyResponses) {
  Response g1 = allreduce("g.0", 10), g2 = allreduce("g.1", 20), h1 = allreduce("h.0", 5);
  g1.group = g2.group = "g.0";
  h1.group = "h.0";
  const auto plan = plan_fusion({allreduce("a", 1), g1, g2, h1, allreduce("b", 2)}, 1 << 20);
  EXPECT_EQ(groups(plan), (Groups{{"a", "g.0", "g.1", "h.0", "b"}}));
  EXPECT_EQ(plan.at(0).sizes, (std::vector<int64_t>{1, 10, 20, 5, 2}));
}

// Host allreduces above max_tensor_bytes run alone (no fusion-buffer copies); the smaller
// ones around them still fuse with each other, across the large one.
TEST(Fusion, TensorsAboveTheMaxTensorSizeRunAlone) {
  const std::vector<Response> ready = {allreduce("a", 10), allreduce("big", 1000), allreduce("b", 10),
                                       allreduce("edge", 100), allreduce("big2", 101)};
  EXPECT_EQ(groups(plan_fusion(ready, 1 << 20, 400)), (Groups{{"a", "b", "edge"}, {"big"}, {"big2"}}))
      << "400 bytes = 100 float32 fuse; 404 bytes do not";
  EXPECT_EQ(groups(plan_fusion(ready, 1 << 20, 0)), (Groups{{"a", "big", "b", "edge", "big2"}})) << "0 = no limit";
  Response on_device = allreduce("device_big", 1000);
  on_device.device = true;
  EXPECT_EQ(groups(plan_fusion({allreduce("c", 10), on_device, on_device}, 1 << 20, 400)),
            (Groups{{"c"}, {"device_big", "device_big"}}))
      << "device responses keep fusing: their copies run at device memory bandwidth";
  Response gathered = other(ResponseType::kAllgather, "g");
  gathered.sizes = {1000};
  gathered.dtype = DataType::kFloat32;
  EXPECT_EQ(groups(plan_fusion({gathered, gathered}, 1 << 20, 400)), (Groups{{"g", "g"}})) << "allreduce only";
}

TEST(Fusion, ThresholdZeroDisablesFusion) {
  const std::vector<Response> input = {allreduce("a", 1), allreduce("b", 1), other(ResponseType::kBroadcast, "x"),
                                       allreduce("c", 0)};
  EXPECT_EQ(plan_fusion(input, 0), input);
}

TEST(Fusion, IncompatibleParametersAreNotMerged) {
  const std::vector<std::pair<std::string, Response>> variants = {
      {"dtype", allreduce("b", 10, DataType::kInt32)},
      {"op", allreduce("b", 10, DataType::kFloat32, ReduceOp::kMax)},
      {"average vs sum", allreduce("b", 10, DataType::kFloat32, ReduceOp::kAverage)},
      {"prescale", allreduce("b", 10, DataType::kFloat32, ReduceOp::kSum, 0.5)},
      {"postscale", allreduce("b", 10, DataType::kFloat32, ReduceOp::kSum, 1.0, 2.0)},
      {"memory (device vs host)",
       [] {
         Response on_device = allreduce("b", 10);
         on_device.device = true;
         return on_device;
       }()},
  };
  for (const auto& [what, b] : variants) {
    const auto plan = plan_fusion({allreduce("a", 10), b}, 1 << 20);
    EXPECT_EQ(groups(plan), (Groups{{"a"}, {"b"}})) << "different " << what;
    EXPECT_EQ(plan.at(1), b) << "different " << what << ": b must pass unchanged";
  }
}

TEST(Fusion, NonFusibleResponsesPassThroughUnchangedAndAllgathersFuse) {
  const Response gather = other(ResponseType::kAllgather, "g");
  const Response bcast = other(ResponseType::kBroadcast, "b");
  const Response error = other(ResponseType::kError, "e");
  const Response gather2 = other(ResponseType::kAllgather, "g2");
  const auto plan = plan_fusion({gather, bcast, error, gather2}, 1 << 20);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].names, (std::vector<std::string>{"g", "g2"})) << "allgathers fuse too";
  EXPECT_EQ(plan[1], bcast);
  EXPECT_EQ(plan[2], error);
}

TEST(Fusion, AllreducesAroundOtherResponses) {
  const Response bcast = other(ResponseType::kBroadcast, "b");
  const auto plan = plan_fusion({allreduce("a", 1), bcast, allreduce("c", 1)}, 1 << 20);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].names, (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(plan[1], bcast);
}

// Random response lists: invariants that must hold for every plan.
TEST(Fusion, RandomListsKeepEveryInvariant) {
  std::mt19937 rng(1234);
  const DataType dtypes[] = {DataType::kFloat32, DataType::kFloat16, DataType::kFloat64, DataType::kInt8};
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kMax};
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t threshold = std::uniform_int_distribution<int64_t>(0, 4096)(rng);
    std::vector<Response> input;
    std::map<std::string, size_t> position;
    const int count = std::uniform_int_distribution<int>(0, 40)(rng);
    for (int i = 0; i < count; ++i) {
      const std::string name = testing_util::cat("t", i);
      position[name] = input.size();
      const int kind = std::uniform_int_distribution<int>(0, 9)(rng);
      if (kind == 0) {
        input.push_back(other(ResponseType::kBroadcast, name));
      } else {
        input.push_back(allreduce(name, std::uniform_int_distribution<int64_t>(0, 700)(rng), dtypes[rng() % 4],
                                  ops[rng() % 2], kind == 9 ? 0.5 : 1.0));
      }
    }
    const auto plan = plan_fusion(input, threshold);
    SCOPED_TRACE(testing_util::cat("trial ", trial, " threshold ", threshold));
    std::vector<int> seen(input.size(), 0);
    size_t previous_first = 0;
    for (size_t p = 0; p < plan.size(); ++p) {
      const Response& fused = plan[p];
      ASSERT_FALSE(fused.names.empty());
      const size_t first = position.at(fused.names[0]);
      if (p > 0) {
        EXPECT_LT(previous_first, first) << "plan entries ordered by their first tensor";
      }
      previous_first = first;
      if (fused.names.size() == 1) {
        EXPECT_EQ(fused, input[first]) << "an unfused response is passed through unchanged";
      } else {
        EXPECT_LE(bytes_of(fused), threshold) << "fused response over the threshold";
        EXPECT_EQ(fused.sizes.size(), fused.names.size());
      }
      for (size_t k = 0; k < fused.names.size(); ++k) {
        const size_t i = position.at(fused.names[k]);
        seen[i] += 1;
        if (k > 0) {
          EXPECT_LT(position.at(fused.names[k - 1]), i) << "members keep submission order";
          const Response& member = input[i];
          EXPECT_EQ(member.type, ResponseType::kAllreduce);
          EXPECT_EQ(member.dtype, fused.dtype);
          EXPECT_EQ(member.op, fused.op);
          EXPECT_EQ(member.prescale_factor, fused.prescale_factor);
          EXPECT_EQ(member.postscale_factor, fused.postscale_factor);
          EXPECT_EQ(member.sizes.at(0), fused.sizes.at(k));
        }
      }
    }
    for (size_t i = 0; i < input.size(); ++i) EXPECT_EQ(seen[i], 1) << input[i].names[0] << " planned once";
    if (threshold == 0) {
      EXPECT_EQ(plan, input);
    }
  }
}

}  // namespace
}  // namespace concord
