// Executor's algorithm selection: size-range rules, the per-(collective, dtype, size
// bucket) memo, measured selection of allreduce algorithms and the cost model (see
// executor.h). Every input is equal on every rank (config and cost model adopted from
// rank 0, measurements decided by rank 0), so every rank chooses alike.
#include <algorithm>
#include <type_traits>

#include "common/enforce.h"
#include "common/logging.h"
#include "runtime/executor.h"

namespace concord {

template <typename AlgorithmType>
std::string Executor::choose(const char* collective, const std::vector<RegistryEntry<AlgorithmType>>& entries,
                             const Problem& problem, const char* memo) {
  // A memoised key never has a size rule (the rules are fixed and a ruled size is never
  // memoised), so looking the memo up first keeps the policy's order.
  const size_t bytes = problem.bytes();
  const std::string key = selection_key(memo != nullptr ? memo : collective, problem.dtype, bytes);
  if (const auto it = chosen_.find(key); it != chosen_.end()) return it->second;
  SelectionDecision decision = policy_.decide(collective, entries, problem, tuned_);
  if (decision.ruled()) return decision.name;  // select_algorithm falls back to the cost model if it declines
  if constexpr (std::is_same_v<AlgorithmType, AllreduceAlgorithm>) {
    if (decision.measure) {
      decision.name = measure_allreduce(problem, policy_.problem_for());
      tuned_.set(key, decision.name);
      if (!cache_path_.empty()) {
        try {
          tuned_.save(cache_path_);
        } catch (const Error& error) {
          CONCORD_LOG_WARN("autotune: the measured choices are not saved: {}", error.what());
        }
      }
    }
  }
  CONCORD_LOG_DEBUG("selection: {} on {} ranks ({} B, first of bucket {}) -> {} ({})", key, problem.ranks, bytes,
                    size_bucket(bytes), decision.name, decision.source);
  chosen_[key] = decision.name;
  return decision.name;
}

std::string Executor::measure_allreduce(const Problem& problem, const ProblemForEntry& problem_for) {
  const auto& entries = allreduce_algorithms();
  std::vector<uint8_t> zeros(problem.bytes(), 0);  // zeros: every op and dtype stays finite
  std::vector<uint8_t> output(problem.bytes(), 0);
  uint8_t* buffer = zeros.data();
  std::vector<TuneCandidate> candidates;
  for (const auto& entry : entries) {
    const Problem mine = problem_for ? problem_for(entry.name, problem) : problem;
    if (!entry.declines(mine).empty()) continue;
    candidates.push_back(TuneCandidate{
        entry.name, 2 * entry.seconds(mine, context_.cost_params), [&, name = entry.name] {
          std::string activity = "allreduce";
          auto& algorithm = this->algorithm(entries, problem, name, activity, problem_for);
          run_in_and_out_of_place(algorithm, buffer, output.data(), problem.count, problem.dtype, problem.op);
        }});
  }
  const TuneResult result = measure_fastest(comm_, candidates);
  if (comm_.rank() == 0) {
    std::string timings;
    for (size_t i = 0; i < candidates.size(); ++i)
      timings += " " + candidates[i].name + "=" + std::to_string(result.seconds[i] * 1e6) + "us (CPU " +
                 std::to_string(result.cpu_seconds[i] * 1e6) + "us)";
    CONCORD_LOG_DEBUG("autotune: {} B on {} ranks, per in-place + out-of-place pair:{} -> {}", problem.bytes(),
                      problem.ranks, timings, candidates[result.winner].name);
  }
  return candidates[result.winner].name;
}

#define CONCORD_INSTANTIATE(Type)                                                                             \
  template std::string Executor::choose(const char*, const std::vector<RegistryEntry<Type>>&, const Problem&, \
                                        const char*);
CONCORD_INSTANTIATE(AllreduceAlgorithm)
CONCORD_INSTANTIATE(AllgatherAlgorithm)
CONCORD_INSTANTIATE(BroadcastAlgorithm)
#undef CONCORD_INSTANTIATE

}  // namespace concord
