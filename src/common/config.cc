#include "common/config.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/enforce.h"

namespace concord {
namespace {

double parse_double_text(const std::string& text, const char* name, double min_value) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  CONCORD_ENFORCE(end != text.c_str() && *end == '\0' && value >= min_value, InvalidArgument, name, "='", text,
                  "' is not a number >= ", min_value);
  return value;
}

int64_t parse_int_text(const std::string& text, const char* name, int64_t min_value) {
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  CONCORD_ENFORCE(end != text.c_str() && *end == '\0' && value >= min_value, InvalidArgument, name, "='", text,
                  "' is not an integer >= ", min_value);
  return value;
}

// Row parsers and formatters, one per field type (function pointers for ConfigVar).
// MinMicro: the smallest value accepted, in millionths (an integer: clang 14 has no
// floating-point template parameters).
template <auto Field, int64_t MinMicro>
void parse_double(Config& config, const std::string& text, const char* name) {
  config.*Field = parse_double_text(text, name, static_cast<double>(MinMicro) * 1e-6);
}
template <auto Field>
std::string format_double(const Config& config) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", config.*Field);
  return text;
}
template <auto Field, int64_t Min>
void parse_int(Config& config, const std::string& text, const char* name) {
  config.*Field = parse_int_text(text, name, Min);
}
template <auto Field>
std::string format_int(const Config& config) {
  return std::to_string(config.*Field);
}
template <auto Field>
void parse_string(Config& config, const std::string& text, const char*) {
  config.*Field = text;
}
template <auto Field>
std::string format_string(const Config& config) {
  return config.*Field;
}
template <auto Field>
void parse_flag(Config& config, const std::string& text, const char* name) {
  config.*Field = parse_int_text(text, name, 0) != 0;
}
template <auto Field>
std::string format_flag(const Config& config) {
  return config.*Field ? "1" : "0";
}
void parse_tree_chunks(Config& config, const std::string& text, const char* name) {
  if (text == "bytes") config.tree_chunks = kTreeChunksFromBytes;
  else if (text == "auto") config.tree_chunks = kTreeChunksAuto;
  else if (text == "turnaround") config.tree_chunks = kTreeChunksTurnaround;
  else config.tree_chunks = parse_int_text(text, name, 1);
}
std::string format_tree_chunks(const Config& config) {
  if (config.tree_chunks == kTreeChunksFromBytes) return "bytes";
  if (config.tree_chunks == kTreeChunksAuto) return "auto";
  if (config.tree_chunks == kTreeChunksTurnaround) return "turnaround";
  return std::to_string(config.tree_chunks);
}

void parse_timeline(Config& config, const std::string& text, const char*) {
  config.timeline_path = text == "DYNAMIC" ? "" : text;
}

// Horovod's parsing of its own variables (horovod/common/utils/env_parser.cc, operations.cc):
// a boolean is set by an integer > 0; the log level is case-insensitive and has FATAL,
// which Concord's nearest level, error, covers. Text that is not an integer is refused with
// the variable's name, where Horovod would silently read it as 0.
bool horovod_true(const std::string& text, const char* name) {
  return parse_int_text(text, name, std::numeric_limits<int64_t>::min()) > 0;
}
template <auto Field>
void horovod_flag(Config& config, const std::string& text, const char* name) {
  config.*Field = horovod_true(text, name);
}
void horovod_log_level(Config& config, const std::string& text, const char* name) {
  std::string level = text;
  std::transform(level.begin(), level.end(), level.begin(), [](unsigned char c) { return std::tolower(c); });
  static const char* const kHorovodLevels[] = {"trace", "debug", "info", "warning", "error", "fatal"};
  CONCORD_ENFORCE(std::find(std::begin(kHorovodLevels), std::end(kHorovodLevels), level) != std::end(kHorovodLevels),
                  InvalidArgument, name, "='", text,
                  "' is not one of Horovod's log levels: TRACE, DEBUG, INFO, WARNING, ", "ERROR, FATAL");
  config.log_level = level == "fatal" ? "error" : level;
}
void horovod_hierarchical_allreduce(Config& config, const std::string& text, const char* name) {
  config.allreduce_algorithm = horovod_true(text, name) ? "hierarchical" : "auto";
}

// A Horovod variable with no meaning in Concord: accepted, listed by concord-info, not parsed.
ConfigVar ignored(const char* name, const char* doc) { return ConfigVar{name, "", "ignored", doc}; }

}  // namespace

const std::vector<ConfigVar>& config_table() {
  static const std::vector<ConfigVar> table = {
      {"CONCORD_CYCLE_TIME", "1", "float",
       "milliseconds: the longest a rank lingers for the rest of a burst of submissions before a "
       "round (it stops earlier when a thread waits on a handle, or when no tensor came for a "
       "tenth of this value), and the longest nap of a rank with tensors in flight between "
       "checks for a round another rank started (it joins within about twice this value); the "
       "background thread runs rounds back to back while they make progress and blocks when idle",
       parse_double<&Config::cycle_time_ms, 0>, format_double<&Config::cycle_time_ms>, "HOROVOD_CYCLE_TIME"},
      {"CONCORD_FUSION_THRESHOLD", "134217728", "bytes",
       "largest fused allreduce in bytes; ready tensors are packed into the fusion buffer up "
       "to this size (0 disables fusion)",
       parse_int<&Config::fusion_threshold_bytes, 0>, format_int<&Config::fusion_threshold_bytes>,
       "HOROVOD_FUSION_THRESHOLD"},
      {"CONCORD_FUSION_MAX_TENSOR_BYTES", "131072", "bytes",
       "largest host tensor an allreduce fuses with others; a larger one runs unfused, in its own "
       "tensors, without the fusion buffer's copy in and out (measured on shared memory, they cost "
       "more than the latency fusion saves from 128-256 KiB up; 0 = fuse tensors of any size)",
       parse_int<&Config::fusion_max_tensor_bytes, 0>, format_int<&Config::fusion_max_tensor_bytes>},
      {"CONCORD_OUTPUT_POOL_BYTES", "268435456", "bytes",
       "concord.torch: the most bytes of released out-of-place results (hvd.allreduce and "
       "friends, tensors of >= 1 MiB) kept for reuse by later results of the same size, so "
       "a new result does not pay for fresh page faults (0 = allocate every result anew)",
       parse_int<&Config::output_pool_bytes, 0>},
      {"CONCORD_RING_CHUNK_BYTES", "524288", "bytes",
       "bytes per pipelined message of the chunked algorithms (ring, the tree allreduces, "
       "halving_doubling, hierarchical, the chain broadcast): data is sent in chunks of at most this size",
       parse_int<&Config::ring_chunk_bytes, 1>, format_int<&Config::ring_chunk_bytes>},
      {"CONCORD_TREE_CHUNKS", "turnaround", "string",
       "pipelined chunks per tree of the tree allreduces (tree, double_tree, overlapped_*): "
       "bytes = chunks of CONCORD_RING_CHUNK_BYTES; auto = C-Cube's K_opt = "
       "sqrt(ceil(log2 P) beta n / alpha) from the cost model; turnaround = K_opt for the "
       "overlapped trees where it exceeds the bytes chunk count (first chunk final sooner), "
       "bytes otherwise; or an integer K >= 1",
       parse_tree_chunks, format_tree_chunks},
      {"CONCORD_ALLREDUCE_ALGORITHM", "auto", "string",
       "allreduce algorithm by registry name (see concord-info), or per size range as "
       "'0-64K:recursive_doubling;64K-:ring' (LOW <= bytes < HIGH, K/M/G = 1024^n); auto = "
       "measured selection or the cost model. An algorithm that declines the call falls back to auto. "
       "HOROVOD_HIERARCHICAL_ALLREDUCE=1 selects hierarchical (0: auto)",
       parse_string<&Config::allreduce_algorithm>, format_string<&Config::allreduce_algorithm>,
       "HOROVOD_HIERARCHICAL_ALLREDUCE", horovod_hierarchical_allreduce},
      {"CONCORD_AUTOTUNE", "1", "int",
       "1 = measured selection: on first use of a size bucket (powers of two, up to 256 MiB) the "
       "runtime times every allreduce algorithm that accepts it, rank 0 keeps the fastest for all "
       "ranks, and the table persists in the cost-model cache file; 0 = the cost model decides "
       "(HOROVOD_AUTOTUNE switches this; Horovod's own autotuner, of the fusion threshold and cycle "
       "time, has no counterpart)",
       parse_flag<&Config::autotune>, format_flag<&Config::autotune>, "HOROVOD_AUTOTUNE",
       horovod_flag<&Config::autotune>},
      {"CONCORD_ALLGATHER_ALGORITHM", "auto", "string", "allgather algorithm by name or size range, or auto",
       parse_string<&Config::allgather_algorithm>, format_string<&Config::allgather_algorithm>},
      {"CONCORD_BROADCAST_ALGORITHM", "auto", "string", "broadcast algorithm by name or size range, or auto",
       parse_string<&Config::broadcast_algorithm>, format_string<&Config::broadcast_algorithm>},
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
       "bitwise allreduce instead of the coordinator (0 disables the cache)",
       parse_int<&Config::cache_capacity, 0>, format_int<&Config::cache_capacity>, "HOROVOD_CACHE_CAPACITY"},
      {"CONCORD_STALL_WARNING_TIME", "60", "float",
       "seconds after which rank 0 logs tensors submitted by some ranks but not others, naming "
       "the missing ranks",
       parse_double<&Config::stall_warning_seconds, 1000>, nullptr, "HOROVOD_STALL_CHECK_TIME_SECONDS"},
      {"CONCORD_STALL_SHUTDOWN_TIME", "600", "float",
       "seconds after which a stall shuts Concord down, fails every pending operation with an "
       "error naming the stalled tensors and ranks, and the job ends (0 = never)",
       parse_double<&Config::stall_shutdown_seconds, 0>, nullptr, "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"},
      {"CONCORD_STALL_CHECK_DISABLE", "0", "int",
       "1 = no stall check at all: neither the warning nor the shutdown above",
       parse_flag<&Config::stall_check_disabled>, nullptr, "HOROVOD_STALL_CHECK_DISABLE",
       horovod_flag<&Config::stall_check_disabled>},
      {"CONCORD_TIMELINE", "", "string",
       "path of a Chrome-trace/Perfetto JSON timeline written by rank 0 from init on (empty or "
       "DYNAMIC = none; start_timeline() starts one at any time either way)",
       parse_timeline, nullptr, "HOROVOD_TIMELINE"},
      {"CONCORD_LOG_LEVEL", "warning", "string",
       "trace, debug, info, warning, error or off; messages are prefixed with the rank "
       "(HOROVOD_LOG_LEVEL: any case, fatal = error)",
       parse_string<&Config::log_level>, nullptr, "HOROVOD_LOG_LEVEL", horovod_log_level},
      {"CONCORD_DYNAMIC_PROCESS_SETS", "0", "int",
       "1 allows add_process_set()/remove_process_set() after init (Horovod's "
       "HOROVOD_DYNAMIC_PROCESS_SETS); 0 = only the sets given to init()",
       parse_flag<&Config::dynamic_process_sets>, format_flag<&Config::dynamic_process_sets>,
       "HOROVOD_DYNAMIC_PROCESS_SETS", horovod_flag<&Config::dynamic_process_sets>},
      {"CONCORD_DEVICE", "auto", "string",
       "devices that TensorView::device indexes: auto (CUDA devices when built and usable), emulated "
       "(device 0 = the strict emulated device, for tests without a GPU) or none",
       parse_string<&Config::device>},
      // Read by the transport layer when the process joins its world (transport_select.cc).
      {"CONCORD_TRANSPORT", "auto", "string",
       "mpi, ucx or auto (MPI under an MPI launcher or alone, UCX under torchrun, srun or concord-run)"},
      {"CONCORD_STORE", "", "string",
       "UCX rendezvous: file:DIR (one host), tcp:HOST:PORT (rank 0 serves) or pmix (the launcher's PMIx "
       "server); empty = pmix under a launcher that provides one (Open MPI's mpirun) in a build with PMIx, "
       "else tcp:MASTER_ADDR:(MASTER_PORT+1)"},
      {"CONCORD_INIT_TIMEOUT", "60", "float",
       "seconds the UCX rendezvous waits for every rank before failing on every rank"},
      {"CONCORD_PEER_TIMEOUT", "15", "float",
       "seconds without a heartbeat in the rendezvous store after which a UCX peer that a transfer waits "
       "for is declared lost (ranks on other hosts, stopped processes); 0 disables the heartbeat"},
      ignored("HOROVOD_TIMELINE_MARK_CYCLES", "Concord's timeline has no cycle markers"),
      ignored("HOROVOD_DISABLE_GROUP_FUSION",
              "a group's members are fused with each other and with other ready tensors regardless"),
      ignored("HOROVOD_HIERARCHICAL_ALLGATHER", "allgather algorithms: CONCORD_ALLGATHER_ALGORITHM"),
      ignored("HOROVOD_AUTOTUNE_LOG", "CONCORD_AUTOTUNE's measured table is kept in the cost-model cache file"),
      ignored("HOROVOD_AUTOTUNE_WARMUP_SAMPLES", "CONCORD_AUTOTUNE times each size bucket once, no sampling"),
      ignored("HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", "CONCORD_AUTOTUNE times each size bucket once, no sampling"),
      ignored("HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "CONCORD_AUTOTUNE does no Bayesian optimisation"),
      ignored("HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "CONCORD_AUTOTUNE does no Bayesian optimisation"),
      ignored("HOROVOD_LOG_HIDE_TIME", "log lines carry the rank; the format is fixed"),
      ignored("HOROVOD_MPI_THREADS_DISABLE", "the thread level is chosen at init (concord.mpi_threads_supported())"),
      ignored("HOROVOD_CPU_OPERATIONS", "host tensors always use Concord's own algorithms over the transport"),
      ignored("HOROVOD_CONTROLLER", "the control plane runs on the transport CONCORD_TRANSPORT chooses (mpi or ucx)"),
      ignored("HOROVOD_GPU_OPERATIONS", "device algorithms are chosen at run time (concord-info lists them)"),
      ignored("HOROVOD_NUM_NCCL_STREAMS", "Concord's device path chooses its own streams"),
      ignored("HOROVOD_THREAD_AFFINITY", "the background thread is not pinned"),
      ignored("HOROVOD_BATCH_D2D_MEMCOPIES", "Concord's device path has no such switch"),
      ignored("HOROVOD_ENABLE_ASYNC_COMPLETION", "Concord's device path has no such switch"),
      ignored("HOROVOD_ADASUM_MPI_CHUNK_SIZE", "Concord's Adasum (allreduce_adasum.h) has no chunk-size setting"),
  };
  return table;
}

ConfigSetting config_setting(const ConfigVar& var) {
  for (const char* name : {var.name, var.horovod_name}) {
    const char* value = name != nullptr ? std::getenv(name) : nullptr;
    if (value != nullptr && *value != '\0') return {value, name};
  }
  return {var.default_value, "default"};
}

std::string config_value(const std::string& name) {
  for (const auto& var : config_table())
    if (name == var.name) return config_setting(var).text;
  CONCORD_THROW(InvalidArgument, "unknown configuration variable ", name);
}

Config::Config() {
  for (const auto& var : config_table())
    if (var.parse != nullptr) var.parse(*this, var.default_value, var.name);
}

const Config& default_config() {
  static const Config defaults;
  return defaults;
}

size_t default_chunk_bytes() { return static_cast<size_t>(default_config().ring_chunk_bytes); }

Config Config::from_env() {
  Config config;
  for (const auto& var : config_table()) {
    if (var.parse == nullptr) continue;
    const ConfigSetting setting = config_setting(var);
    const bool horovod = var.horovod_name != nullptr && setting.source == var.horovod_name;
    const auto parse = horovod && var.horovod_parse != nullptr ? var.horovod_parse : var.parse;
    parse(config, setting.text, horovod ? var.horovod_name : var.name);
  }
  return config;
}

std::string encode_shared_settings(const Config& config) {
  nlohmann::json json = nlohmann::json::object();
  for (const auto& var : config_table())
    if (var.shared != nullptr) json[var.name] = var.shared(config);
  return json.dump();
}

std::vector<std::string> adopt_shared_settings(Config& config, const std::string& encoded) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(encoded);
  } catch (const nlohmann::json::exception& e) {
    CONCORD_THROW(InvalidArgument, "shared settings are not valid JSON: ", e.what());
  }
  std::vector<std::string> differed;
  for (const auto& var : config_table()) {
    if (var.shared == nullptr || var.parse == nullptr || !json.contains(var.name)) continue;
    const std::string text = json.at(var.name).get<std::string>();
    if (text == var.shared(config)) continue;
    var.parse(config, text, var.name);
    differed.push_back(var.name);
  }
  return differed;
}

}  // namespace concord
