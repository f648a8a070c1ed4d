// What concord-info reports (src/info/build_info.h): the JSON document lists every row of
// the configuration table and every entry of every registry, in order, with the values the
// environment sets; the text form has a line for each; a malformed cost-model override is
// an InvalidArgument naming the variable.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "algorithms/allreduce_device.h"
#include "algorithms/registry.h"
#include "common/config.h"
#include "common/enforce.h"
#include "info/build_info.h"
#include "sparse/sparse_allreduce.h"

namespace concord {
namespace {

using nlohmann::json;

template <typename Entries>
std::vector<std::string> names_of(const Entries& entries) {
  std::vector<std::string> names;
  for (const auto& entry : entries) names.push_back(entry.name);
  return names;
}

std::vector<std::string> names_in(const json& group) {
  std::vector<std::string> names;
  for (const auto& entry : group.at("algorithms")) names.push_back(entry.at("name").get<std::string>());
  return names;
}

TEST(BuildInfo, SettingsAreTheConfigurationTableWithCurrentValues) {
  setenv("CONCORD_FUSION_THRESHOLD", "4096", 1);
  const json info = json::parse(build_info_json());
  unsetenv("CONCORD_FUSION_THRESHOLD");
  const auto& table = config_table();
  const json& settings = info.at("settings");
  ASSERT_EQ(settings.size(), table.size());
  for (size_t i = 0; i < table.size(); ++i) {
    SCOPED_TRACE(table[i].name);
    EXPECT_EQ(settings[i].at("name"), table[i].name);
    EXPECT_EQ(settings[i].at("default"), table[i].default_value);
    EXPECT_EQ(settings[i].at("type"), table[i].type);
    EXPECT_EQ(settings[i].at("doc"), table[i].doc);
    EXPECT_EQ(settings[i].at("shared"), table[i].shared != nullptr);
    const std::string expected =
        std::string(table[i].name) == "CONCORD_FUSION_THRESHOLD" ? "4096" : table[i].default_value;
    EXPECT_EQ(settings[i].at("value"), expected);
  }
}

TEST(BuildInfo, CollectivesListEveryRegistryInOrder) {
  const json info = json::parse(build_info_json(-1));
  const json& groups = info.at("collectives");
  std::vector<std::string> sparse_names;
  for (const auto& entry : sparse::sparse_allreduce_algorithms()) sparse_names.push_back(entry.name);
  const std::vector<std::pair<std::string, std::vector<std::string>>> expected = {
      {"allreduce", names_of(allreduce_algorithms())},
      {"allgather", names_of(allgather_algorithms())},
      {"broadcast", names_of(broadcast_algorithms())},
      {"reduce-scatter", names_of(reduce_scatter_algorithms())},
      {"alltoall", names_of(alltoall_algorithms())},
      {"reduce (a phase of hierarchical)", names_of(reduce_algorithms())},
      {"sparse allreduce", sparse_names},
  };
  ASSERT_EQ(groups.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(groups[i].at("collective"), expected[i].first);
    EXPECT_EQ(names_in(groups[i]), expected[i].second) << expected[i].first;
    for (const auto& entry : groups[i].at("algorithms"))
      EXPECT_FALSE(entry.at("description").get<std::string>().empty()) << expected[i].first << " " << entry.at("name");
  }
  EXPECT_EQ(groups[0].at("setting"), "CONCORD_ALLREDUCE_ALGORITHM");
  // One allreduce registry for every memory kind: each row says which it runs on.
  for (const auto& entry : groups[0].at("algorithms")) {
    // staged and nccl, and the host algorithms' device rows (cuda_aware, staged_gpu_tree, ...).
    const std::string name = entry.at("name");
    const bool device = name == "staged" || name == "nccl" || host_algorithm_of(name) != name;
    EXPECT_EQ(entry.at("memory"), device ? "device" : "host") << entry.at("name");
  }
  EXPECT_TRUE(groups[3].at("setting").is_null());
  EXPECT_EQ(sparse_names, sparse::sparse_allreduce_names());
}

TEST(BuildInfo, TextHasALinePerSettingAndAlgorithm) {
  const std::string text = build_info_text();
  const json info = json::parse(build_info_json());
  for (const auto& var : info.at("settings"))
    EXPECT_NE(text.find(var.at("name").get<std::string>() + " "), std::string::npos) << var.at("name");
  for (const auto& group : info.at("collectives")) {
    const std::string heading = group.at("collective").get<std::string>() + " algorithms";
    EXPECT_NE(text.find(heading), std::string::npos) << heading;
    for (const auto& entry : group.at("algorithms")) {
      const std::string name = entry.at("name");
      std::string line = "  " + name;
      line.append(name.size() < 20 ? 20 - name.size() : 0, ' ').append(" ");
      line.append(entry.at("description").get<std::string>()).append("\n");
      EXPECT_NE(text.find(line), std::string::npos) << group.at("collective") << " " << name;
    }
  }
  EXPECT_NE(text.find("\ncost model: alpha "), std::string::npos);
  const std::string cuda = info.at("cuda").at("summary").get<std::string>() + "\n";
  EXPECT_EQ(text.substr(text.size() - std::min(text.size(), cuda.size())), cuda) << "the CUDA line ends the text";
}

TEST(BuildInfo, CostModelFollowsTheEnvironment) {
  setenv("CONCORD_COST_ALPHA", "2.5e-6", 1);
  const json info = json::parse(build_info_json());
  setenv("CONCORD_COST_ALPHA", "fast", 1);
  try {
    build_info_json();
    ADD_FAILURE() << "a malformed CONCORD_COST_ALPHA was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("CONCORD_COST_ALPHA"), std::string::npos) << e.what();
  }
  unsetenv("CONCORD_COST_ALPHA");
  EXPECT_DOUBLE_EQ(info.at("cost_model").at("alpha").get<double>(), 2.5e-6);
  for (const char* key : {"beta", "gamma", "inter_alpha", "inter_beta", "mpi_alpha", "mpi_beta"})
    EXPECT_TRUE(info.at("cost_model").at(key).is_number()) << key;
}

}  // namespace
}  // namespace concord
