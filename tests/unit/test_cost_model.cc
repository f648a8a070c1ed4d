// CostParams (src/algorithms/cost_model.h): JSON round trip, environment overrides, clear
// errors for bad files and values; Cost::seconds and placement on inter-node links.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "algorithms/cost_model.h"
#include "common/enforce.h"

namespace concord {
namespace {

std::string temp_path(const char* name) { return ::testing::TempDir() + name; }

TEST(CostParams, SaveThenLoadRoundTrips) {
  CostParams params{1.5e-6, 2e-10, 3e-10, 4e-5, 5e-9};
  const std::string path = temp_path("concord_cost_roundtrip.json");
  params.save(path);
  const CostParams loaded = CostParams::load(path);
  EXPECT_DOUBLE_EQ(loaded.alpha, 1.5e-6);
  EXPECT_DOUBLE_EQ(loaded.beta, 2e-10);
  EXPECT_DOUBLE_EQ(loaded.gamma, 3e-10);
  EXPECT_DOUBLE_EQ(loaded.inter_alpha, 4e-5);
  EXPECT_DOUBLE_EQ(loaded.inter_beta, 5e-9);
  std::remove(path.c_str());
}

TEST(CostParams, EnvironmentOverridesTheFile) {
  const std::string path = temp_path("concord_cost_env.json");
  CostParams{1e-6, 1e-9, 1e-9, 1e-5, 1e-8}.save(path);
  setenv("CONCORD_COST_MODEL", path.c_str(), 1);
  setenv("CONCORD_COST_BETA", "2.5e-10", 1);
  const CostParams params = CostParams::from_env();
  unsetenv("CONCORD_COST_MODEL");
  unsetenv("CONCORD_COST_BETA");
  EXPECT_DOUBLE_EQ(params.alpha, 1e-6);
  EXPECT_DOUBLE_EQ(params.beta, 2.5e-10);
  std::remove(path.c_str());
}

TEST(CostParams, BadFileOrValueIsAClearError) {
  const std::string path = temp_path("concord_cost_bad.json");
  std::ofstream(path) << "{not json";
  try {
    CostParams::load(path);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_THROW(CostParams::load(temp_path("concord_cost_missing.json")), InvalidArgument);
  setenv("CONCORD_COST_ALPHA", "fast", 1);
  try {
    CostParams::from_env();
    ADD_FAILURE() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("CONCORD_COST_ALPHA"), std::string::npos) << e.what();
  }
  unsetenv("CONCORD_COST_ALPHA");
  std::remove(path.c_str());
}

TEST(Cost, SecondsAndInterNodePlacement) {
  const CostParams params{1e-6, 1e-9, 1e-10, 1e-5, 1e-8};
  Cost cost;
  cost.rounds = 4;
  cost.wire_bytes = 1000;
  cost.reduce_bytes = 500;
  EXPECT_DOUBLE_EQ(cost.seconds(params), 4e-6 + 1e-6 + 5e-8);
  Cost one_node = cost;
  EXPECT_DOUBLE_EQ(one_node.place(1).seconds(params), cost.seconds(params));
  cost.place(2);
  EXPECT_EQ(cost.rounds, 0);
  EXPECT_DOUBLE_EQ(cost.seconds(params), 4e-5 + 1e-5 + 5e-8);
}

}  // namespace
}  // namespace concord
