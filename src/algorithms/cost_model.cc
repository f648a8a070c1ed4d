#include "algorithms/cost_model.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/config.h"
#include "common/enforce.h"

namespace concord {
namespace {

struct Field {
  const char* key;
  const char* env;
  double CostParams::*member;
};
constexpr Field kFields[] = {
    {"alpha", "CONCORD_COST_ALPHA", &CostParams::alpha},
    {"beta", "CONCORD_COST_BETA", &CostParams::beta},
    {"gamma", "CONCORD_COST_GAMMA", &CostParams::gamma},
    {"inter_alpha", "CONCORD_COST_INTER_ALPHA", &CostParams::inter_alpha},
    {"inter_beta", "CONCORD_COST_INTER_BETA", &CostParams::inter_beta},
    {"mpi_alpha", "CONCORD_COST_MPI_ALPHA", &CostParams::mpi_alpha},
    {"mpi_beta", "CONCORD_COST_MPI_BETA", &CostParams::mpi_beta},
};

// The constants `json` names; defaults for the others.
CostParams fields_of(const nlohmann::json& json) {
  CostParams params;
  for (const auto& field : kFields)
    if (json.contains(field.key)) params.*field.member = json.at(field.key).get<double>();
  return params;
}

std::string default_path() {
  const char* home = std::getenv("HOME");
  return home == nullptr ? "" : std::string(home) + "/.cache/concord/cost_model.json";
}

}  // namespace

CostParams CostParams::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  CONCORD_ENFORCE(in.good(), InvalidArgument, "cannot read cost model file '", path, "'");
  std::string text(kMaxFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  CONCORD_ENFORCE(!in.bad(), InvalidArgument, "cannot read cost model file '", path, "'");
  text.resize(static_cast<size_t>(in.gcount()));
  CONCORD_ENFORCE(text.size() <= kMaxFileBytes, InvalidArgument, "cost model file '", path, "' is larger than ",
                  kMaxFileBytes, " bytes: not a file concord-calibrate wrote");
  return parse(text, path);
}

CostParams CostParams::parse(const std::string& text, const std::string& source) {
  CostParams params;
  try {
    const auto json = nlohmann::json::parse(text);
    CONCORD_ENFORCE(json.is_object(), InvalidArgument, "cost model file '", source,
                    "' is not valid: not a JSON object");
    params = fields_of(json);
  } catch (const nlohmann::json::exception& e) {
    CONCORD_THROW(InvalidArgument, "cost model file '", source, "' is not valid: ", e.what());
  }
  for (const auto& field : kFields)
    CONCORD_ENFORCE(params.*field.member >= 0 && std::isfinite(params.*field.member), InvalidArgument,
                    "cost model file '", source, "': ", field.key, " is negative or not finite");
  return params;
}

void CostParams::save(const std::string& path) const {
  nlohmann::json json = nlohmann::json::object();
  {  // keep the file's other keys (the autotune tables of algorithms/autotune.h)
    std::ifstream in(path);
    if (in.good()) {
      json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
      if (!json.is_object()) json = nlohmann::json::object();
    }
  }
  for (const auto& field : kFields) json[field.key] = this->*field.member;
  const auto parent = std::filesystem::path(path).parent_path();
  std::error_code ignored;
  if (!parent.empty() && !std::filesystem::exists(parent, ignored)) {
    std::filesystem::create_directories(parent, ignored);
    std::filesystem::permissions(parent, std::filesystem::perms::owner_all, ignored);  // 0700
  }
  std::ofstream out(path);
  out << json.dump(2) << "\n";
  CONCORD_ENFORCE(out.good(), InvalidArgument, "cannot write cost model file '", path, "'");
}

CostParams CostParams::from_env() {
  CostParams params;
  std::string path = config_value("CONCORD_COST_MODEL");
  if (path.empty()) {
    path = default_path();
    if (!path.empty() && !std::filesystem::exists(path)) path.clear();
  }
  if (!path.empty()) params = load(path);
  for (const auto& field : kFields) {
    const std::string text = config_value(field.env);
    if (text.empty()) continue;
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    CONCORD_ENFORCE(end != text.c_str() && *end == '\0' && value >= 0, InvalidArgument, field.env, "='", text,
                    "' is not a number >= 0 (seconds)");
    params.*field.member = value;
  }
  return params;
}

std::string CostParams::encode() const {
  nlohmann::json json;
  for (const auto& field : kFields) json[field.key] = this->*field.member;
  return json.dump();
}

CostParams CostParams::decode(const std::string& text) {
  try {
    return fields_of(nlohmann::json::parse(text));
  } catch (const nlohmann::json::exception& e) {
    CONCORD_THROW(InvalidArgument, "cost model constants are not valid: ", e.what());
  }
}

}  // namespace concord
