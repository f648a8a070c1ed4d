// Measured selection (NCCL fills its tuning table once, UCC keeps score
// maps per size range): on first use of a size bucket the runtime times every algorithm
// that accepts the problem, on the real communicator, and keeps the fastest. Rank 0's
// timings decide and its choice is broadcast, so every rank runs the same algorithm. The
// table persists in the cost-model cache file (CostParams::from_env's file, default
// ~/.cache/concord/cost_model.json, directory created 0700) under
// "autotune" -> scope -> key, so a later job on the same configuration measures nothing.
//
// Keys: "<collective>/<dtype>/<bucket>", bucket = floor(log2 bytes) ("2^12" holds
// 4096 .. 8191 bytes; "0B" is the empty message). Buckets start at powers of two, so a
// size-range override (algorithms/size_rules.h) with power-of-two bounds never splits one.
// Scope: what else the timings depend on (ranks, nodes, chunk sizes): autotune_scope().
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/registry.h"
#include "concord/types.h"
#include "transport/communicator.h"

namespace concord {

/// floor(log2(bytes)), or -1 for 0 bytes.
int size_bucket(size_t bytes);
/// "allreduce/float32/2^12" for (kAllreduce-like name "allreduce", kFloat32, 4096..8191 B).
std::string selection_key(const std::string& collective, DataType dtype, size_t bytes);
/// "ranks=4 nodes=1 chunk=524288 tree_chunks=0 timing=pair,cpu": the configuration a table
/// holds for; "timing=pair" = each repetition one in-place and one out-of-place call, "cpu" =
/// the CPU tie-break of pick_winner (tables saved before either are not reused).
std::string autotune_scope(int ranks, int nodes, int64_t ring_chunk_bytes, int64_t tree_chunks);
/// The cost-model cache file: CONCORD_COST_MODEL, else ~/.cache/concord/cost_model.json
/// (whether or not it exists yet); "" when HOME is unset.
std::string cost_model_cache_path();

/// The measured winners of one scope: key -> algorithm name.
class AutotuneTable {
 public:
  explicit AutotuneTable(std::string scope = "") : scope_(std::move(scope)) {}

  const std::string& scope() const { return scope_; }
  /// The algorithm measured fastest for `key`, or "" when none was.
  std::string find(const std::string& key) const;
  void set(const std::string& key, const std::string& algorithm) { entries_[key] = algorithm; }
  const std::map<std::string, std::string>& entries() const { return entries_; }

  /// The entries as a JSON object {"key": "algorithm", ...} (for rank 0's broadcast).
  std::string encode() const;
  /// Replaces the entries by those of encode()'s text. Throws InvalidArgument if malformed.
  void decode(const std::string& text);
  /// Reads this scope's entries from the cache file at `path`; a missing file or scope
  /// leaves the table empty. Throws InvalidArgument naming the file when it is malformed.
  void load(const std::string& path);
  /// Writes this scope's entries into the cache file at `path`, keeping every other key
  /// (cost constants, other scopes timed the same way: scopes of another "timing=" are
  /// dropped, and should the file grow past CostParams::kMaxFileBytes only this scope's
  /// table is kept); creates the directory with mode 0700 and replaces the file atomically
  /// (write + rename). Throws InvalidArgument on I/O error.
  void save(const std::string& path) const;

 private:
  std::string scope_;
  std::map<std::string, std::string> entries_;
};

/// Largest allreduce that measured selection times (bytes): above it every candidate
/// call takes ~0.1 s or more, so those sizes are left to the cost model.
inline constexpr size_t kMaxMeasuredBytes = size_t{256} << 20;

/// True when measured selection times `problem` (with CONCORD_AUTOTUNE on): element-wise
/// allreduce (adasum has one row) of host buffers (the candidates run on host scratch
/// buffers) on 2+ ranks of 1 B .. kMaxMeasuredBytes.
inline bool measured_selection_applies(const Problem& problem) {
  return problem.memory == MemoryKind::kHost && problem.op != ReduceOp::kAdasum && problem.ranks > 1 &&
         problem.bytes() > 0 && problem.bytes() <= kMaxMeasuredBytes;
}

/// The measured choice `table` holds for `problem` (key selection_key("allreduce", ...)),
/// or "" when it holds none or one that `entries` lack or that declines the problem (as
/// judged on problem_for(name, problem) when problem_for is set): then it must be measured
/// anew. The runtime's selection and AlgorithmAllreducer.runtime_choice share it.
std::string usable_measured_choice(const AutotuneTable& table,
                                   const std::vector<RegistryEntry<AllreduceAlgorithm>>& entries,
                                   const Problem& problem, const ProblemForEntry& problem_for);

/// One repetition of measured allreduce selection: `algorithm` in place on `buffer`, then
/// out of place from `buffer` into `output` (`count` elements of `dtype` each, count x
/// element size bytes), each run to completion. Timing both kinds makes one choice fit
/// hvd.allreduce and hvd.allreduce_ alike (they share it, so their results stay bitwise
/// equal), and charges the algorithms whose out-of-place call copies first. Collective.
void run_in_and_out_of_place(AllreduceAlgorithm& algorithm, void* buffer, void* output, size_t count, DataType dtype,
                             ReduceOp op);

/// One algorithm to time: `run` executes one complete call (same problem on every rank).
struct TuneCandidate {
  std::string name;
  double estimate_seconds = 0;  ///< the cost model's prediction, sets the repetitions
  std::function<void()> run;
};

/// Timing of one tuning run (rank 0's numbers; other ranks get only `winner`).
struct TuneResult {
  size_t winner = 0;            ///< index into the candidates
  std::vector<double> seconds;  ///< rank 0: median over its rounds of each candidate's seconds per call
  /// rank 0: the CPU time (user + system) of the measuring thread per call, seconds: the
  /// median over the rounds on each rank, the largest over the ranks
  std::vector<double> cpu_seconds;
  /// rank 0: the candidates that ran the final rounds (all of them when none did)
  std::vector<size_t> finalists;
};

/// Candidates whose median time is within this factor of the fastest finalist's count as
/// equally fast (a round on a shared machine moves by more), and the one of them that used
/// the least CPU wins: the CPU an allreduce leaves free is what the compute it overlaps with
/// (the backward pass, a DAG's other operations) gets.
inline constexpr double kTuneTieBand = 1.05;

/// The winner among `finalists` (indices into `seconds` and `cpu_seconds`, both per
/// candidate): the least CPU among those within kTuneTieBand of the lowest time. On equal
/// CPU the fastest stays; among equally fast, the first listed. No margin is asked of the
/// CPU either: among candidates equal in time and CPU, noise decides, and either choice
/// serves. Throws InvalidArgument for no finalist.
size_t pick_winner(const std::vector<double>& seconds, const std::vector<double>& cpu_seconds,
                   const std::vector<size_t>& finalists);

/// Times every candidate on `comm` and returns rank 0's pick (pick_winner), the same
/// index on every rank. Each candidate runs once to warm up (scratch allocation, page
/// faults) and once more as a timed probe, then in 3 interleaved rounds of n calls each
/// (n = ~2 ms / the larger of rank 0's estimate and probe, 1..64, broadcast so that every
/// rank makes the same number of calls whatever its own numbers), each round after a
/// barrier; then the finalists, those whose best round is within 1.3x of the lowest median
/// round on rank 0, run 6 more rounds (successive halving: close contenders are decided on
/// more calls), and pick_winner() decides on the finalists' median rounds: the fastest, or
/// among those within kTuneTieBand of it the one whose calls used the least CPU. A round's
/// time is its average per call, wall clock and the calling thread's CPU clock.
/// Collective over `comm` (barriers, two broadcasts and a third one when there are several
/// candidates, one gather, one bit allreduce); every rank must
/// pass the same candidates in the same order, else every rank throws InternalError naming
/// the lists. Throws InvalidArgument for no candidate.
TuneResult measure_fastest(Communicator& comm, const std::vector<TuneCandidate>& candidates);

}  // namespace concord
