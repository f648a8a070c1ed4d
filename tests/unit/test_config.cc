// The configuration table's Horovod aliases (common/config.h): a HOROVOD_* variable sets
// its CONCORD_* row when that one is unset, parsed as Horovod 0.28.1 parses it
// (horovod/common/utils/env_parser.cc: SetBoolFromEnv reads a boolean as strtol(text) > 0;
// operations.cc: HOROVOD_TIMELINE=DYNAMIC starts no timeline at init, HOROVOD_LOG_LEVEL is
// case-insensitive); the CONCORD_* variable wins when both are set; concord-info names the
// variable that set each value and lists the Horovod variables Concord ignores.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/config.h"
#include "common/enforce.h"
#include "info/build_info.h"

namespace concord {
namespace {

// Sets environment variables for one test and restores them (unset) on destruction.
class Environment {
 public:
  Environment() = default;
  Environment(std::initializer_list<std::pair<std::string, std::string>> variables) {
    for (const auto& [name, value] : variables) set(name, value);
  }
  void set(const std::string& name, const std::string& value) {
    setenv(name.c_str(), value.c_str(), 1);
    names_.push_back(name);
  }
  ~Environment() {
    for (const auto& name : names_) unsetenv(name.c_str());
  }

 private:
  std::vector<std::string> names_;
};

const ConfigVar& row(const std::string& name) {
  for (const auto& var : config_table())
    if (name == var.name || (var.horovod_name != nullptr && name == var.horovod_name)) return var;
  throw std::runtime_error("no configuration row for " + name);
}

// The line of `text` that starts with `start` ("" when none).
std::string line_of(const std::string& text, const std::string& start) {
  const size_t at = text.rfind("\n" + start);
  if (at == std::string::npos) return "";
  return text.substr(at + 1, text.find('\n', at + 1) - at - 1);
}

TEST(ConfigHorovodAliases, EveryHorovodVariableOfTheDropInListHasARow) {
  // The Horovod settings a job script sets (the drop-in's list): each is an alias of a
  // CONCORD_* row or a row of type "ignored".
  for (const char* name :
       {"HOROVOD_FUSION_THRESHOLD", "HOROVOD_CYCLE_TIME", "HOROVOD_CACHE_CAPACITY", "HOROVOD_TIMELINE",
        "HOROVOD_TIMELINE_MARK_CYCLES", "HOROVOD_STALL_CHECK_DISABLE", "HOROVOD_STALL_CHECK_TIME_SECONDS",
        "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "HOROVOD_LOG_LEVEL", "HOROVOD_AUTOTUNE", "HOROVOD_DYNAMIC_PROCESS_SETS",
        "HOROVOD_HIERARCHICAL_ALLREDUCE", "HOROVOD_DISABLE_GROUP_FUSION"}) {
    SCOPED_TRACE(name);
    const ConfigVar& var = row(name);
    const bool alias = var.horovod_name != nullptr && std::string(var.horovod_name) == name;
    const bool ignored = std::string(var.type) == "ignored" && std::string(var.name) == name;
    EXPECT_TRUE(alias || ignored) << "row " << var.name;
    if (ignored) EXPECT_EQ(var.parse, nullptr);
  }
}

TEST(ConfigHorovodAliases, AliasSetsTheSettingWhenTheConcordVariableIsUnset) {
  Environment env{{"HOROVOD_CYCLE_TIME", "3.5"},
                  {"HOROVOD_FUSION_THRESHOLD", "1048576"},
                  {"HOROVOD_CACHE_CAPACITY", "17"},
                  {"HOROVOD_STALL_CHECK_TIME_SECONDS", "12"},
                  {"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "30"}};
  const Config config = Config::from_env();
  EXPECT_DOUBLE_EQ(config.cycle_time_ms, 3.5);
  EXPECT_EQ(config.fusion_threshold_bytes, 1048576);
  EXPECT_EQ(config.cache_capacity, 17);
  EXPECT_DOUBLE_EQ(config.stall_warning_seconds, 12);
  EXPECT_DOUBLE_EQ(config.stall_shutdown_seconds, 30);
  const ConfigSetting setting = config_setting(row("CONCORD_CYCLE_TIME"));
  EXPECT_EQ(setting.text, "3.5");
  EXPECT_EQ(setting.source, "HOROVOD_CYCLE_TIME");
  EXPECT_EQ(config_value("CONCORD_FUSION_THRESHOLD"), "1048576");
}

TEST(ConfigHorovodAliases, ConcordVariableWinsWhenBothAreSet) {
  Environment env{{"HOROVOD_CYCLE_TIME", "3.5"},
                  {"CONCORD_CYCLE_TIME", "0.25"},
                  {"HOROVOD_HIERARCHICAL_ALLREDUCE", "1"},
                  {"CONCORD_ALLREDUCE_ALGORITHM", "ring"}};
  const Config config = Config::from_env();
  EXPECT_DOUBLE_EQ(config.cycle_time_ms, 0.25);
  EXPECT_EQ(config.allreduce_algorithm, "ring");
  EXPECT_EQ(config_setting(row("CONCORD_CYCLE_TIME")).source, "CONCORD_CYCLE_TIME");
  EXPECT_EQ(config_setting(row("CONCORD_ALLREDUCE_ALGORITHM")).source, "CONCORD_ALLREDUCE_ALGORITHM");
}

TEST(ConfigHorovodAliases, BooleansAreIntegersGreaterThanZero) {
  // SetBoolFromEnv: strtol(text) > 0. CONCORD_AUTOTUNE's own parser refuses a negative.
  const std::vector<std::pair<std::string, bool>> cases = {{"1", true}, {"2", true}, {"0", false}, {"-1", false}};
  for (const auto& [text, expected] : cases) {
    SCOPED_TRACE(text);
    Environment env;
    env.set("HOROVOD_AUTOTUNE", text);
    env.set("HOROVOD_DYNAMIC_PROCESS_SETS", text);
    env.set("HOROVOD_STALL_CHECK_DISABLE", text);
    const Config config = Config::from_env();
    EXPECT_EQ(config.autotune, expected);
    EXPECT_EQ(config.dynamic_process_sets, expected);
    EXPECT_EQ(config.stall_check_disabled, expected);
  }
  Environment env;
  env.set("CONCORD_AUTOTUNE", "-1");
  EXPECT_THROW(Config::from_env(), InvalidArgument);
}

TEST(ConfigHorovodAliases, TextThatIsNotAnIntegerIsRefusedNamingTheHorovodVariable) {
  Environment env;
  env.set("HOROVOD_AUTOTUNE", "yes");
  try {
    Config::from_env();
    ADD_FAILURE() << "HOROVOD_AUTOTUNE=yes was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("HOROVOD_AUTOTUNE='yes'"), std::string::npos) << e.what();
  }
}

TEST(ConfigHorovodAliases, TimelineDynamicStartsNoTimelineAtInit) {
  {
    Environment env;
    env.set("HOROVOD_TIMELINE", "DYNAMIC");
    EXPECT_EQ(Config::from_env().timeline_path, "");
  }
  Environment env;
  env.set("HOROVOD_TIMELINE", "/tmp/horovod_timeline.json");
  EXPECT_EQ(Config::from_env().timeline_path, "/tmp/horovod_timeline.json");
}

TEST(ConfigHorovodAliases, LogLevelIsCaseInsensitiveAndFatalIsError) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"DEBUG", "debug"}, {"Trace", "trace"}, {"WARNING", "warning"}, {"FATAL", "error"}};
  for (const auto& [text, expected] : cases) {
    Environment env;
    env.set("HOROVOD_LOG_LEVEL", text);
    EXPECT_EQ(Config::from_env().log_level, expected) << text;
  }
  Environment env{{"HOROVOD_LOG_LEVEL", "verbose"}};
  try {
    Config::from_env();
    ADD_FAILURE() << "HOROVOD_LOG_LEVEL=verbose was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("HOROVOD_LOG_LEVEL='verbose'"), std::string::npos) << e.what();
  }
}

TEST(ConfigHorovodAliases, HierarchicalAllreduceSelectsTheHierarchicalAlgorithm) {
  for (const auto& [text, expected] :
       std::vector<std::pair<std::string, std::string>>{{"1", "hierarchical"}, {"0", "auto"}}) {
    Environment env;
    env.set("HOROVOD_HIERARCHICAL_ALLREDUCE", text);
    EXPECT_EQ(Config::from_env().allreduce_algorithm, expected) << text;
  }
}

TEST(ConfigHorovodAliases, ConcordInfoNamesTheSourceAndListsIgnoredVariables) {
  Environment env;
  env.set("HOROVOD_CACHE_CAPACITY", "33");
  env.set("HOROVOD_TIMELINE_MARK_CYCLES", "1");
  env.set("HOROVOD_NOT_A_SETTING", "1");
  const nlohmann::json info = nlohmann::json::parse(build_info_json());
  bool found_cache = false, found_ignored = false;
  for (const auto& var : info.at("settings")) {
    if (var.at("name") == "CONCORD_CACHE_CAPACITY") {
      found_cache = true;
      EXPECT_EQ(var.at("value"), "33");
      EXPECT_EQ(var.at("source"), "HOROVOD_CACHE_CAPACITY");
      EXPECT_EQ(var.at("horovod_name"), "HOROVOD_CACHE_CAPACITY");
    } else if (var.at("name") == "HOROVOD_TIMELINE_MARK_CYCLES") {
      found_ignored = true;
      EXPECT_EQ(var.at("type"), "ignored");
      EXPECT_EQ(var.at("value"), "1");
    } else if (var.at("name") == "CONCORD_CYCLE_TIME") {
      EXPECT_EQ(var.at("source"), "default");
    }
  }
  EXPECT_TRUE(found_cache);
  EXPECT_TRUE(found_ignored);
  EXPECT_EQ(info.at("unknown_horovod_variables"), nlohmann::json::array({"HOROVOD_NOT_A_SETTING"}));
  const std::string text = build_info_text();
  EXPECT_NE(text.find("set by HOROVOD_CACHE_CAPACITY"), std::string::npos) << text;
  EXPECT_NE(line_of(text, "HOROVOD_TIMELINE_MARK_CYCLES ").find("ignored: set to '1'"), std::string::npos) << text;
  EXPECT_NE(line_of(text, "HOROVOD_NOT_A_SETTING ").find("ignored: not a Horovod setting Concord knows"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace concord
