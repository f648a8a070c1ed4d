// The configuration table (after UCC's
// ucc_config_field_t): every CONCORD_* environment variable is one row holding its name,
// default, type, doc, the parser that stores it in Config and, for the settings every rank
// must share, the formatter the runtime uses to hand rank 0's value to every rank by name
// (encode_shared_settings / adopt_shared_settings). Config::from_env(), the adoption and
// `concord-info` are all driven by the rows. A row may name Horovod's variable for the same
// setting (horovod_name): it is read, parsed as Horovod parses it, when the CONCORD_* one is
// not set, so a Horovod job script keeps working. Horovod variables with no meaning here are
// rows of type "ignored" (accepted, listed by concord-info, never parsed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace concord {

struct Config;

/// One row of the configuration table.
struct ConfigVar {
  const char* name;           ///< environment variable, e.g. "CONCORD_CYCLE_TIME"
  const char* default_value;  ///< as a string, as it would be written in the environment
  const char* type;           ///< "float", "int", "bytes", "string"
  const char* doc;            ///< one line: meaning and unit
  /// Stores `text` (as written in the environment) in the variable's Config field; throws
  /// InvalidArgument naming the variable and the value when malformed or out of range.
  /// Null for variables read elsewhere (CONCORD_COST_*: CostParams::from_env).
  void (*parse)(Config& config, const std::string& text, const char* name) = nullptr;
  /// For a setting every rank must share (the runtime uses rank 0's): the field's value
  /// as text that parse() reads back exactly. Null for per-rank settings.
  std::string (*shared)(const Config& config) = nullptr;
  /// Horovod 0.28.1's variable for this setting (e.g. "HOROVOD_CYCLE_TIME"), read when
  /// `name` is unset or empty; null when Horovod has none.
  const char* horovod_name = nullptr;
  /// Parses the Horovod variable's text as Horovod does (e.g. a boolean is an integer > 0,
  /// HOROVOD_HIERARCHICAL_ALLREDUCE=1 selects the hierarchical allreduce); null = `parse`.
  void (*horovod_parse)(Config& config, const std::string& text, const char* name) = nullptr;
};

/// Where a row's value comes from: the text, and the variable that set it ("CONCORD_...",
/// the row's horovod_name, or "default" when neither is set).
struct ConfigSetting {
  std::string text;
  std::string source;
};

/// The setting of `var` from the environment: its CONCORD_* variable when set (it wins),
/// else its Horovod alias when set, else its default.
ConfigSetting config_setting(const ConfigVar& var);

/// All variables Concord reads, in a stable order.
const std::vector<ConfigVar>& config_table();

/// The text of `name`'s setting (config_setting: the CONCORD_* variable, else its Horovod
/// alias, else the default). Throws InvalidArgument if `name` is not in the table.
std::string config_value(const std::string& name);

/// Config::tree_chunks: chunks of ring_chunk_bytes bytes (K = ceil(n / chunk bytes)).
constexpr int64_t kTreeChunksFromBytes = 0;
/// Config::tree_chunks: K_opt = sqrt(D beta n / alpha) chunks (optimal_chunk_bytes()).
constexpr int64_t kTreeChunksAuto = -1;
/// Config::tree_chunks (the default): K_opt for the overlapped trees where it turns the
/// first chunk around sooner than the byte chunking (K_opt > ceil(n / chunk bytes)), the
/// byte chunking otherwise and for the non-overlapped trees (algorithms/tree_chunking.h).
constexpr int64_t kTreeChunksTurnaround = -2;

/// Run-time settings of one process, parsed from the environment once. Every field is a
/// row of config_table(), and the row's default_value is the only place its default is
/// written: Config() parses them (the members are zero until it does).
struct Config {
  /// The built-in defaults: every row's default_value through the row's parser; the
  /// environment is not read (from_env() does).
  Config();

  double cycle_time_ms{};             ///< CONCORD_CYCLE_TIME
  int64_t fusion_threshold_bytes{};   ///< CONCORD_FUSION_THRESHOLD
  int64_t fusion_max_tensor_bytes{};  ///< CONCORD_FUSION_MAX_TENSOR_BYTES
  int64_t ring_chunk_bytes{};         ///< CONCORD_RING_CHUNK_BYTES
  int64_t output_pool_bytes{};        ///< CONCORD_OUTPUT_POOL_BYTES (concord.torch)
  /// CONCORD_TREE_CHUNKS: chunks per tree of the tree allreduces (tree, double_tree and
  /// their overlapped variants): kTreeChunksTurnaround ("turnaround"), kTreeChunksFromBytes
  /// ("bytes", K follows ring_chunk_bytes), kTreeChunksAuto ("auto", C-Cube's K_opt from the
  /// cost model for every tree), or a forced K >= 1.
  int64_t tree_chunks{};
  std::string allreduce_algorithm;  ///< CONCORD_ALLREDUCE_ALGORITHM
  std::string allgather_algorithm;  ///< CONCORD_ALLGATHER_ALGORITHM
  std::string broadcast_algorithm;  ///< CONCORD_BROADCAST_ALGORITHM
  /// CONCORD_AUTOTUNE: time the candidate allreduce algorithms on first use of a size
  /// bucket (up to kMaxMeasuredBytes) and keep the fastest (algorithms/autotune.h); false =
  /// the cost model decides.
  bool autotune{};
  int64_t cache_capacity{};         ///< CONCORD_CACHE_CAPACITY
  double stall_warning_seconds{};   ///< CONCORD_STALL_WARNING_TIME
  double stall_shutdown_seconds{};  ///< CONCORD_STALL_SHUTDOWN_TIME
  bool stall_check_disabled{};      ///< CONCORD_STALL_CHECK_DISABLE: no stall warning or shutdown
  /// CONCORD_TIMELINE: the file rank 0 writes from init on; empty = none (also for
  /// "DYNAMIC", Horovod's value for "none at init, start_timeline() later").
  std::string timeline_path;
  std::string log_level;        ///< CONCORD_LOG_LEVEL
  bool dynamic_process_sets{};  ///< CONCORD_DYNAMIC_PROCESS_SETS
  /// CONCORD_DEVICE: the devices TensorView::device indexes (device/device_set.h): "auto"
  /// (the CUDA devices when built and usable, else none), "emulated" (device 0 is the
  /// strict emulated device: the GPU data path without a GPU) or "none".
  std::string device;

  /// Parses every variable of the table; throws InvalidArgument naming the variable and its
  /// value when one is malformed or out of range.
  static Config from_env();
};

/// The built-in defaults (one Config(), built on first use), for the structs that carry a
/// setting of the table outside Config (NegotiatorOptions, KVStoreOptions, ...), so that
/// their defaults are the table's too.
const Config& default_config();

/// CONCORD_RING_CHUNK_BYTES's default (the table's), the pipelining unit in bytes of every
/// algorithm, problem and context built without one.
size_t default_chunk_bytes();

/// The shared settings of `config` as {"CONCORD_NAME": "text", ...} JSON text.
std::string encode_shared_settings(const Config& config);
/// Parses encode_shared_settings()'s text into `config` row by row (by name, never by
/// position; a name this build does not know is skipped). Returns the names whose value
/// differed from `config`'s. Throws InvalidArgument when the text is malformed.
std::vector<std::string> adopt_shared_settings(Config& config, const std::string& encoded);

}  // namespace concord
