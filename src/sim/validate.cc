#include "sim/validate.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "common/enforce.h"

namespace concord::sim {
namespace {

bool modelled(const std::string& name) {
  for (const auto& entry : simulated_algorithms())
    if (entry.name == name) return true;
  return false;
}

int ranks_of(const nlohmann::json& record) {
  for (const char* key : {"P", "ranks", "nranks", "world_size"})
    if (record.contains(key)) return record.at(key).get<int>();
  throw nlohmann::json::other_error::create(501, "record has no P (or ranks, nranks, world_size)", &record);
}

}  // namespace

std::vector<Measurement> read_measurements(const std::string& path) {
  std::ifstream in(path);
  CONCORD_ENFORCE(in.good(), InvalidArgument, "cannot read measurements file '", path, "'");
  std::vector<Measurement> measurements;
  size_t index = 0;
  try {
    nlohmann::json json = nlohmann::json::parse(in);
    if (json.is_object()) json = json.contains("records") ? json.at("records") : json.at("results");
    for (; index < json.size(); ++index) {
      const auto& record = json.at(index);
      if (record.value("collective", std::string("allreduce")) != "allreduce") continue;
      const std::string algorithm = record.at("algorithm").get<std::string>();
      if (!modelled(algorithm)) continue;
      Measurement m;
      m.algorithm = algorithm;
      m.bytes = record.at("size").get<size_t>();
      m.ranks = ranks_of(record);
      m.in_place = record.value("in_place", true);
      m.seconds = record.at("time").get<double>() * 1e-6;
      measurements.push_back(m);
    }
  } catch (const nlohmann::json::exception& e) {
    CONCORD_THROW(InvalidArgument, "measurements file '", path, "', record ", index, ": ", e.what());
  }
  return measurements;
}

std::vector<ValidationRow> validate(const std::vector<Measurement>& measurements, const CostParams& params,
                                    int ranks_per_node, size_t chunk_bytes, const LinkShaping& shaping) {
  const bool shaped = shaping.bucket_bytes > 0;
  CONCORD_ENFORCE(!shaped || shaping.line_beta > 0, InvalidArgument, "validate: a token bucket of ",
                  shaping.bucket_bytes, " bytes needs the unshaped link's seconds per byte (line_beta > 0)");
  CONCORD_ENFORCE(!shaped || ranks_per_node > 0, InvalidArgument,
                  "validate: token-bucket links shape the inter-node links, but all ranks are on one node; "
                  "pass ranks_per_node (concord-sim -r)");
  CONCORD_ENFORCE(shaping.gap < 0 || ranks_per_node > 0, InvalidArgument,
                  "validate: the gap applies to the inter-node links, but all ranks are on one node; "
                  "pass ranks_per_node (concord-sim -r)");
  SimOptions options;
  options.force_step = shaped || shaping.gap >= 0;  // the closed forms know neither buckets nor gaps
  if (shaped) {
    options.max_calls = 1000;
  }
  std::vector<ValidationRow> rows;
  for (const Measurement& m : measurements) {
    const int R = ranks_per_node > 0 ? ranks_per_node : m.ranks;
    const LinkParams inter{params.inter_alpha, params.inter_beta, shaping.bucket_bytes, shaping.line_beta, shaping.gap};
    const Topology topology = Topology::two_level(m.ranks, R, {params.alpha, params.beta}, inter);
    const Problem problem = allreduce_problem(m.bytes, topology, chunk_bytes);
    const SimAlgorithm& algorithm = find_simulated(m.algorithm);
    if (!algorithm.declines(problem, topology).empty()) continue;
    const Prediction prediction = predict(algorithm, problem, topology, params.gamma, options);
    ValidationRow row{m, prediction.seconds, 0, prediction.method, prediction.detail.steady};
    if (m.seconds > 0) row.relative_error = (prediction.seconds - m.seconds) / m.seconds;
    rows.push_back(row);
  }
  return rows;
}

}  // namespace concord::sim
