// How Concord picks the algorithm of a collective, written once and used by the executor
// (src/runtime/executor_selection.cc, which adds its memo and its measurements) and by the
// benchmarks (concord._bench.AlgorithmAllreducer, tools/python/), so a benchmark's
// "what would the runtime run" cannot drift from the runtime:
//   1. a size rule (CONCORD_ALLREDUCE_ALGORITHM, _ALLGATHER_, _BROADCAST_; size_rules.h)
//      covering the size names the entry (the cost model decides when it declines);
//   2. allreduce with measured selection on (CONCORD_AUTOTUNE and
//      measured_selection_applies(): 2+ ranks, 1 B .. kMaxMeasuredBytes): the measured choice
//      an AutotuneTable holds, when its entry still accepts the problem; when it holds none,
//      the decision says "measure" (the executor times the candidates; a benchmark that only
//      reads the cache falls through to 3);
//   3. the cost model (select_algorithm), each entry judged on the problem with its tree
//      chunking (CONCORD_TREE_CHUNKS, tree_chunking.h).
#pragma once

#include <string>
#include <vector>

#include "algorithms/autotune.h"
#include "algorithms/registry.h"
#include "algorithms/size_rules.h"
#include "common/config.h"

namespace concord {

/// The outcome of steps 1-3 for one problem.
struct SelectionDecision {
  std::string name;      ///< the entry; empty when `measure` is set
  const char* source;    ///< "size rule", "measured earlier (autotune table)", "cost model" or "measure now"
  bool measure = false;  ///< step 2 applies but the table has no usable choice: time the candidates
  bool ruled() const { return std::string(source) == "size rule"; }
};

class SelectionPolicy {
 public:
  /// The rules, CONCORD_AUTOTUNE and CONCORD_TREE_CHUNKS of `config`, with `cost` for the
  /// cost model. Throws InvalidArgument for a malformed rule (naming the variable).
  SelectionPolicy(const Config& config, const CostParams& cost);

  /// The problem each entry is judged on: its tree chunking for the tree allreduces.
  ProblemForEntry problem_for() const;

  /// Steps 1-3 for `problem` of `collective` ("allreduce", "allgather" or "broadcast")
  /// among `entries`; `tuned` is consulted in step 2 (allreduce only).
  template <typename AlgorithmType>
  SelectionDecision decide(const std::string& collective, const std::vector<RegistryEntry<AlgorithmType>>& entries,
                           const Problem& problem, const AutotuneTable& tuned) const;

  /// Step 3 alone: the cost model's entry for `problem` (`forced` first when it accepts).
  template <typename AlgorithmType>
  std::string cost_model(const std::vector<RegistryEntry<AlgorithmType>>& entries, const Problem& problem,
                         const std::string& forced = "") const {
    return select_algorithm(entries, problem, cost_, forced, problem_for()).name;
  }

  const CostParams& cost_params() const { return cost_; }

 private:
  const std::vector<SizeRule>& rules(const std::string& collective) const;

  std::vector<SizeRule> allreduce_rules_, allgather_rules_, broadcast_rules_;
  bool autotune_;
  int64_t tree_chunks_;
  CostParams cost_;
};

}  // namespace concord
