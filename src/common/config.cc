#include "common/config.h"

#include <cstdlib>

#include "common/enforce.h"

namespace concord {

const std::vector<ConfigVar>& config_table() {
  static const std::vector<ConfigVar> table = {
      {"CONCORD_CYCLE_TIME", "1", "float",
       "upper bound in milliseconds on how long a rank with tensors in flight takes to join a "
       "negotiation round another rank starts (the background thread runs rounds back to back "
       "while they make progress and blocks when idle; an enqueue wakes it at once)"},
      {"CONCORD_FUSION_THRESHOLD", "134217728", "bytes",
       "largest fused allreduce in bytes; ready tensors are packed into the fusion buffer up "
       "to this size (0 disables fusion)"},
      {"CONCORD_RING_CHUNK_BYTES", "524288", "bytes",
       "bytes per pipelined message of the ring allreduce (a ring segment is sent in chunks "
       "of at most this size)"},
      {"CONCORD_TREE_CHUNKS", "bytes", "string",
       "pipelined chunks per tree of the tree allreduces (tree, double_tree, overlapped_*): "
       "bytes = chunks of CONCORD_RING_CHUNK_BYTES; auto = C-Cube's K_opt = "
       "sqrt(ceil(log2 P) beta n / alpha) from the cost model; or an integer K >= 1"},
      {"CONCORD_ALLREDUCE_ALGORITHM", "auto", "string",
       "allreduce algorithm by registry name (see concord-info); auto = the one the cost "
       "model predicts fastest. An algorithm that declines the call falls back to auto"},
      {"CONCORD_ALLGATHER_ALGORITHM", "auto", "string", "allgather algorithm by name, or auto"},
      {"CONCORD_BROADCAST_ALGORITHM", "auto", "string", "broadcast algorithm by name, or auto"},
      {"CONCORD_COST_MODEL", "", "string",
       "JSON file of measured cost-model constants written by concord-calibrate (empty = "
       "~/.cache/concord/cost_model.json if it exists, else built-in defaults)"},
      {"CONCORD_COST_ALPHA", "", "float", "overrides the intra-node latency per message, seconds"},
      {"CONCORD_COST_BETA", "", "float", "overrides the intra-node transfer time per byte, seconds"},
      {"CONCORD_COST_GAMMA", "", "float", "overrides the reduction time per byte, seconds"},
      {"CONCORD_COST_INTER_ALPHA", "", "float", "overrides the inter-node latency per message, seconds"},
      {"CONCORD_COST_INTER_BETA", "", "float", "overrides the inter-node transfer time per byte, seconds"},
      {"CONCORD_COST_MPI_ALPHA", "", "float", "overrides MPI_Allreduce's latency per round, seconds"},
      {"CONCORD_COST_MPI_BETA", "", "float", "overrides MPI_Allreduce's time per byte, seconds"},
      {"CONCORD_CACHE_CAPACITY", "1024", "int",
       "entries (= bits) of the response cache; negotiated tensors are then coordinated by one "
       "bitwise allreduce instead of the coordinator (0 disables the cache)"},
      {"CONCORD_STALL_WARNING_TIME", "60", "float",
       "seconds after which rank 0 logs tensors submitted by some ranks but not others, naming "
       "the missing ranks"},
      {"CONCORD_STALL_SHUTDOWN_TIME", "600", "float",
       "seconds after which a stall shuts Concord down, fails every pending operation with an "
       "error naming the stalled tensors and ranks, and the job ends (0 = never)"},
      {"CONCORD_TIMELINE", "", "string",
       "path of a Chrome-trace/Perfetto JSON timeline written by rank 0 (empty = none)"},
      {"CONCORD_LOG_LEVEL", "warning", "string",
       "trace, debug, info, warning, error or off; messages are prefixed with the rank"},
      {"CONCORD_DYNAMIC_PROCESS_SETS", "0", "int",
       "1 allows add_process_set()/remove_process_set() after init (Horovod's "
       "HOROVOD_DYNAMIC_PROCESS_SETS); 0 = only the sets given to init()"},
  };
  return table;
}

std::string config_value(const std::string& name) {
  for (const auto& var : config_table()) {
    if (name != var.name) continue;
    const char* value = std::getenv(var.name);
    return value != nullptr && *value != '\0' ? value : var.default_value;
  }
  CONCORD_THROW(InvalidArgument, "unknown configuration variable ", name);
}

namespace {

double parse_double(const char* name, double min_value) {
  const std::string text = config_value(name);
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  CONCORD_ENFORCE(end != text.c_str() && *end == '\0' && value >= min_value, InvalidArgument,
                  name, "='", text, "' is not a number >= ", min_value);
  return value;
}

int64_t parse_int(const char* name, int64_t min_value) {
  const std::string text = config_value(name);
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  CONCORD_ENFORCE(end != text.c_str() && *end == '\0' && value >= min_value, InvalidArgument,
                  name, "='", text, "' is not an integer >= ", min_value);
  return value;
}

int64_t parse_tree_chunks() {
  const std::string text = config_value("CONCORD_TREE_CHUNKS");
  if (text == "bytes") return kTreeChunksFromBytes;
  if (text == "auto") return kTreeChunksAuto;
  return parse_int("CONCORD_TREE_CHUNKS", 1);
}

}  // namespace

Config Config::from_env() {
  Config config;
  config.cycle_time_ms = parse_double("CONCORD_CYCLE_TIME", 0.0);
  config.fusion_threshold_bytes = parse_int("CONCORD_FUSION_THRESHOLD", 0);
  config.ring_chunk_bytes = parse_int("CONCORD_RING_CHUNK_BYTES", 1);
  config.tree_chunks = parse_tree_chunks();
  config.allreduce_algorithm = config_value("CONCORD_ALLREDUCE_ALGORITHM");
  config.allgather_algorithm = config_value("CONCORD_ALLGATHER_ALGORITHM");
  config.broadcast_algorithm = config_value("CONCORD_BROADCAST_ALGORITHM");
  config.cache_capacity = parse_int("CONCORD_CACHE_CAPACITY", 0);
  config.stall_warning_seconds = parse_double("CONCORD_STALL_WARNING_TIME", 0.001);
  config.stall_shutdown_seconds = parse_double("CONCORD_STALL_SHUTDOWN_TIME", 0.0);
  config.timeline_path = config_value("CONCORD_TIMELINE");
  config.log_level = config_value("CONCORD_LOG_LEVEL");
  config.dynamic_process_sets = parse_int("CONCORD_DYNAMIC_PROCESS_SETS", 0) != 0;
  return config;
}

}  // namespace concord
