#include "algorithms/selection_policy.h"

#include <type_traits>

#include "algorithms/tree_chunking.h"
#include "common/enforce.h"

namespace concord {

SelectionPolicy::SelectionPolicy(const Config& config, const CostParams& cost)
    : allreduce_rules_(parse_size_rules(config.allreduce_algorithm, "CONCORD_ALLREDUCE_ALGORITHM")),
      allgather_rules_(parse_size_rules(config.allgather_algorithm, "CONCORD_ALLGATHER_ALGORITHM")),
      broadcast_rules_(parse_size_rules(config.broadcast_algorithm, "CONCORD_BROADCAST_ALGORITHM")),
      autotune_(config.autotune),
      tree_chunks_(config.tree_chunks),
      cost_(cost) {}

ProblemForEntry SelectionPolicy::problem_for() const {
  return [tree_chunks = tree_chunks_, cost = cost_](const std::string& name, const Problem& problem) {
    return tree_chunked_problem(name, problem, tree_chunks, cost);
  };
}

const std::vector<SizeRule>& SelectionPolicy::rules(const std::string& collective) const {
  if (collective == "allreduce") return allreduce_rules_;
  if (collective == "allgather") return allgather_rules_;
  CONCORD_ENFORCE(collective == "broadcast", InternalError, "no selection rules for collective '", collective, "'");
  return broadcast_rules_;
}

template <typename AlgorithmType>
SelectionDecision SelectionPolicy::decide(const std::string& collective,
                                          const std::vector<RegistryEntry<AlgorithmType>>& entries,
                                          const Problem& problem, const AutotuneTable& tuned) const {
  std::string ruled = rule_for(rules(collective), problem.bytes());
  if (!ruled.empty()) return {ruled, "size rule"};
  if constexpr (std::is_same_v<AlgorithmType, AllreduceAlgorithm>) {
    if (autotune_ && measured_selection_applies(problem)) {
      std::string measured = usable_measured_choice(tuned, entries, problem, problem_for());
      if (measured.empty()) return {"", "measure now", true};
      return {measured, "measured earlier (autotune table)"};
    }
  }
  return {cost_model(entries, problem), "cost model"};
}

#define CONCORD_INSTANTIATE(Type)                                                                                 \
  template SelectionDecision SelectionPolicy::decide(const std::string&, const std::vector<RegistryEntry<Type>>&, \
                                                     const Problem&, const AutotuneTable&) const;
CONCORD_INSTANTIATE(AllreduceAlgorithm)
CONCORD_INSTANTIATE(AllgatherAlgorithm)
CONCORD_INSTANTIATE(BroadcastAlgorithm)
#undef CONCORD_INSTANTIATE

}  // namespace concord
