#include "tools/bench/bench_context.h"

#include <algorithm>
#include <set>
#include <typeinfo>

#include "algorithms/autotune.h"
#include "common/config.h"
#include "common/enforce.h"
#include "concord/concord.h"

namespace concord::bench {
namespace {

constexpr const char* kRegistryPrefix = "registry:";

bool is_bench_name(const std::string& name) { return name == "mpi" || name == "runtime" || name == "auto"; }

template <typename AlgorithmType>
std::vector<std::string> registry_names(const std::vector<RegistryEntry<AlgorithmType>>& entries) {
  std::vector<std::string> names;
  for (const auto& entry : entries) {
    if (entry.memory != MemoryKind::kHost) continue;  // host buffers here: concord-gpubench-allreduce times the others
    names.push_back(is_bench_name(entry.name) ? kRegistryPrefix + entry.name : entry.name);
  }
  return names;
}

std::vector<std::string> registry_names(Collective collective) {
  switch (collective) {
    case Collective::kAllreduce: return registry_names(allreduce_algorithms());
    case Collective::kAllgather: return registry_names(allgather_algorithms());
    case Collective::kBroadcast: return registry_names(broadcast_algorithms());
    case Collective::kReduceScatter: return registry_names(reduce_scatter_algorithms());
    case Collective::kAlltoall: return registry_names(alltoall_algorithms());
  }
  return {};
}

}  // namespace

BenchContext::BenchContext()
    : comm_(process_world().duplicate("bench")),
      context_{*comm_, scratch_, static_cast<size_t>(Config::from_env().ring_chunk_bytes),
               process_world().node_of_rank()},
      cost_(CostParams::from_env()) {
  // Rank 0's cost model on every rank (as the runtime adopts it): every rank then reports
  // the same model choice and gives measured selection the same estimates.
  const std::string mine = cost_.encode();
  std::vector<uint8_t> bytes(mine.begin(), mine.end());
  comm_->broadcast_bytes(bytes, 0);
  cost_ = CostParams::decode(std::string(bytes.begin(), bytes.end()));
}

BenchContext::~BenchContext() {
  instances_.clear();
  if (runtime_started_) concord::shutdown();
}

int BenchContext::nodes() const {
  return static_cast<int>(std::set<int>(context_.node_of_rank.begin(), context_.node_of_rank.end()).size());
}

void BenchContext::start_runtime() {
  if (runtime_started_) return;
  concord::init();
  runtime_started_ = true;
}

template <typename AlgorithmType>
Resolution BenchContext::resolve(const std::vector<RegistryEntry<AlgorithmType>>& entries, const std::string& name,
                                 const Problem& problem) const {
  Resolution result;
  if (name == "mpi") {
    if (process_world().origin().transport != "mpi") {  // the MPI library's collective needs MPI's world
      result.skip_reason = "the transport is " + process_world().origin().transport + ", not MPI";
      return result;
    }
    result.kind = Resolution::Kind::kMpi;
    return result;
  }
  if (name == "runtime") {
    result.kind = Resolution::Kind::kRuntime;
    return result;
  }
  if (name == "auto") {
    const bool any =
        std::any_of(entries.begin(), entries.end(), [&](const auto& entry) { return entry.declines(problem).empty(); });
    if (!any) {
      result.skip_reason = "no registered algorithm accepts this problem";
      return result;
    }
    result.kind = Resolution::Kind::kRegistry;
    result.registry_name = select_algorithm(entries, problem, cost_).name;
    return result;
  }
  const std::string entry_name =
      name.rfind(kRegistryPrefix, 0) == 0 ? name.substr(std::string(kRegistryPrefix).size()) : name;
  const auto& entry = find_algorithm(entries, entry_name);
  result.skip_reason = entry.declines(problem);
  if (result.skip_reason.empty()) {
    result.kind = Resolution::Kind::kRegistry;
    result.registry_name = entry.name;
  }
  return result;
}

std::string BenchContext::tuned_allreduce(const Problem& problem) {
  const std::string key = selection_key("allreduce", problem.dtype, problem.bytes());
  if (const auto it = tuned_.find(key); it != tuned_.end()) return it->second;
  std::vector<uint8_t> zeros(problem.bytes(), 0), output(problem.bytes(), 0);
  std::vector<TuneCandidate> candidates;
  for (const auto& entry : allreduce_algorithms()) {
    if (!entry.declines(problem).empty()) continue;
    candidates.push_back(TuneCandidate{entry.name, 2 * entry.seconds(problem, cost_), [&, name = entry.name] {
                                         run_in_and_out_of_place(instance(allreduce_algorithms(), name), zeros.data(),
                                                                 output.data(), problem.count, problem.dtype,
                                                                 problem.op);
                                       }});
  }
  if (candidates.empty()) return tuned_[key] = "";
  return tuned_[key] = candidates[measure_fastest(*comm_, candidates).winner].name;
}

template <typename AlgorithmType>
AlgorithmType& BenchContext::instance(const std::vector<RegistryEntry<AlgorithmType>>& entries,
                                      const std::string& name) {
  // Keyed by collective too: "ring" names an allreduce and an allgather algorithm.
  auto& slot = instances_[std::string(typeid(AlgorithmType).name()) + "/" + name];
  if (!slot) slot = find_algorithm(entries, name).create(context_);
  return static_cast<AlgorithmType&>(*slot);
}

#define CONCORD_BENCH_INSTANTIATE(Type)                                                                  \
  template Resolution BenchContext::resolve(const std::vector<RegistryEntry<Type>>&, const std::string&, \
                                            const Problem&) const;                                       \
  template Type& BenchContext::instance(const std::vector<RegistryEntry<Type>>&, const std::string&);
CONCORD_BENCH_INSTANTIATE(AllreduceAlgorithm)
CONCORD_BENCH_INSTANTIATE(AllgatherAlgorithm)
CONCORD_BENCH_INSTANTIATE(BroadcastAlgorithm)
CONCORD_BENCH_INSTANTIATE(ReduceScatterAlgorithm)
CONCORD_BENCH_INSTANTIATE(AlltoallAlgorithm)
#undef CONCORD_BENCH_INSTANTIATE

std::vector<std::string> expand_algorithms(const std::vector<std::string>& requested, Collective collective) {
  std::vector<std::string> names;
  auto add = [&](const std::string& name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  };
  for (const auto& name : requested) {
    if (name != "all") {
      add(name);
      continue;
    }
    for (const auto& registered : registry_names(collective)) add(registered);
    add("mpi");
    add("auto");
  }
  return names;
}

}  // namespace concord::bench
