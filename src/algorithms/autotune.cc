#include "algorithms/autotune.h"

#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "algorithms/cost_model.h"
#include "common/config.h"
#include "common/enforce.h"

namespace concord {
namespace {

constexpr int kRounds = 3;
constexpr double kRoundSeconds = 2e-3;
constexpr int kMaxCalls = 64;
// Successive halving: after kRounds, the candidates whose best round is within
// kFinalistMargin of the lowest median round (rank 0's numbers) run kFinalRounds more, and
// pick_winner decides among the finalists (the lowest median round, or within kTuneTieBand
// of it the least CPU). A candidate's best round
// screens it in (a disturbed round does not drop it), medians decide (one lucky round does
// not win: on a 2-core machine a round moves by 10-30%, and some algorithms' times are
// bimodal), and the candidate with the lowest median is always a finalist.
constexpr double kFinalistMargin = 1.3;
constexpr int kFinalRounds = 6;

// CPU time (user + system) of the calling thread, seconds.
double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// One round: every candidate in `which` runs calls[i] times after a barrier; appends each
// one's per-call average to rounds[i] (wall clock) and cpu_rounds[i] (this thread's CPU).
void time_round(Communicator& comm, const std::vector<TuneCandidate>& candidates, const std::vector<int>& calls,
                const std::vector<size_t>& which, std::vector<std::vector<double>>& rounds,
                std::vector<std::vector<double>>& cpu_rounds) {
  using Clock = std::chrono::steady_clock;
  for (const size_t i : which) {
    comm.barrier();
    const double cpu_start = thread_cpu_seconds();
    const auto start = Clock::now();
    for (int call = 0; call < calls[i]; ++call) candidates[i].run();
    rounds[i].push_back(std::chrono::duration<double>(Clock::now() - start).count() / calls[i]);
    cpu_rounds[i].push_back((thread_cpu_seconds() - cpu_start) / calls[i]);
  }
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Rank 0's finalists (candidates whose best round is within kFinalistMargin of the lowest
// median), the same list on every rank.
std::vector<size_t> agreed_finalists(Communicator& comm, const std::vector<std::vector<double>>& rounds) {
  double lowest_median = INFINITY;
  for (const auto& times : rounds) lowest_median = std::min(lowest_median, median(times));
  std::vector<uint8_t> chosen(rounds.size(), 0);
  for (size_t i = 0; i < rounds.size(); ++i)
    chosen[i] = *std::min_element(rounds[i].begin(), rounds[i].end()) <= kFinalistMargin * lowest_median ? 1 : 0;
  comm.broadcast_bytes(chosen, 0);
  std::vector<size_t> finalists;
  for (size_t i = 0; i < chosen.size(); ++i)
    if (chosen[i] != 0) finalists.push_back(i);
  return finalists;
}

// On rank 0, each candidate's median CPU per call on the rank where it was highest (a tree's
// root reduces more than its leaves, and the busiest rank is the one whose compute waits);
// empty elsewhere. Collective (one gather).
std::vector<double> busiest_rank_cpu(Communicator& comm, const std::vector<std::vector<double>>& cpu_rounds) {
  std::vector<double> mine;
  for (const auto& times : cpu_rounds) mine.push_back(median(times));
  std::vector<uint8_t> bytes(mine.size() * sizeof(double));
  std::memcpy(bytes.data(), mine.data(), bytes.size());
  const auto gathered = comm.gather_bytes(bytes, 0);
  if (comm.rank() != 0) return {};
  for (const auto& other : gathered) {
    // Unreachable: agreed_calls made every rank throw unless all have the same candidates.
    CONCORD_ENFORCE(other.size() == bytes.size(), InternalError, "autotune: a rank sent ", other.size(),
                    " bytes of CPU times, rank 0 has ", bytes.size());
    for (size_t i = 0; i < mine.size(); ++i) {
      double value = 0;
      std::memcpy(&value, other.data() + i * sizeof(double), sizeof(double));
      mine[i] = std::max(mine[i], value);
    }
  }
  return mine;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in.good()) return nlohmann::json::object();
  try {
    auto json = nlohmann::json::parse(in);
    CONCORD_ENFORCE(json.is_object(), InvalidArgument, "cost model file '", path, "' is not a JSON object");
    return json;
  } catch (const nlohmann::json::exception& e) {
    CONCORD_THROW(InvalidArgument, "cost model file '", path, "' is not valid: ", e.what());
  }
}

// How often each candidate runs per round: ~kRoundSeconds over the larger of the cost
// model's estimate and the probe call's time (on a loaded machine a call takes far longer
// than the model says; 64 calls of each candidate would take seconds per bucket), as rank
// 0 has them, on every rank. Every call is collective, so ranks whose numbers differ (a
// probe, a cost model read from a file another job rewrote) would otherwise run different
// numbers of calls and hang. Ranks with a different candidate list all throw.
std::vector<int> agreed_calls(Communicator& comm, const std::vector<TuneCandidate>& candidates,
                              const std::vector<double>& probe_seconds) {
  nlohmann::json plan = nlohmann::json::array();
  std::vector<std::string> names;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const TuneCandidate& candidate = candidates[i];
    const double estimate = std::max({candidate.estimate_seconds, probe_seconds[i], 1e-7});
    plan.push_back(
        {candidate.name, static_cast<int>(std::clamp(std::ceil(kRoundSeconds / estimate), 1.0, double{kMaxCalls}))});
    names.push_back(candidate.name);
  }
  const std::string mine = plan.dump();
  std::vector<uint8_t> bytes(mine.begin(), mine.end());
  comm.broadcast_bytes(bytes, 0);
  const auto root = nlohmann::json::parse(bytes.begin(), bytes.end());
  std::vector<std::string> root_names;
  std::vector<int> calls;
  for (const auto& row : root) {
    root_names.push_back(row.at(0).get<std::string>());
    calls.push_back(row.at(1).get<int>());
  }
  std::vector<uint64_t> differs = {root_names == names ? 0u : 1u};
  comm.allreduce_bits(differs, /*bitwise_and=*/false);
  CONCORD_ENFORCE(differs[0] == 0, InternalError, "autotune: the ranks have different candidate algorithms (rank 0: ",
                  nlohmann::json(root_names).dump(), ", rank ", comm.rank(), ": ", nlohmann::json(names).dump(),
                  "); nothing was measured");
  return calls;
}

}  // namespace

int size_bucket(size_t bytes) {
  int bucket = -1;
  while (bytes > 0) {
    bytes >>= 1;
    ++bucket;
  }
  return bucket;
}

std::string selection_key(const std::string& collective, DataType dtype, size_t bytes) {
  const int bucket = size_bucket(bytes);
  return collective + "/" + dtype_name(dtype) + "/" + (bucket < 0 ? std::string("0B") : "2^" + std::to_string(bucket));
}

std::string autotune_scope(int ranks, int nodes, int64_t ring_chunk_bytes, int64_t tree_chunks) {
  return "ranks=" + std::to_string(ranks) + " nodes=" + std::to_string(nodes) +
         " chunk=" + std::to_string(ring_chunk_bytes) + " tree_chunks=" + std::to_string(tree_chunks) +
         " timing=pair,cpu";
}

std::string cost_model_cache_path() {
  const std::string path = config_value("CONCORD_COST_MODEL");
  if (!path.empty()) return path;
  const char* home = std::getenv("HOME");
  return home == nullptr || *home == '\0' ? "" : std::string(home) + "/.cache/concord/cost_model.json";
}

std::string usable_measured_choice(const AutotuneTable& table,
                                   const std::vector<RegistryEntry<AllreduceAlgorithm>>& entries,
                                   const Problem& problem, const ProblemForEntry& problem_for) {
  const std::string name = table.find(selection_key("allreduce", problem.dtype, problem.bytes()));
  const bool usable = !name.empty() && std::any_of(entries.begin(), entries.end(), [&](const auto& entry) {
    return entry.name == name && entry.declines(problem_for ? problem_for(entry.name, problem) : problem).empty();
  });
  return usable ? name : "";
}

std::string AutotuneTable::find(const std::string& key) const {
  const auto it = entries_.find(key);
  return it == entries_.end() ? "" : it->second;
}

std::string AutotuneTable::encode() const { return nlohmann::json(entries_).dump(); }

void AutotuneTable::decode(const std::string& text) {
  try {
    entries_ = nlohmann::json::parse(text).get<std::map<std::string, std::string>>();
  } catch (const nlohmann::json::exception& e) {
    CONCORD_THROW(InvalidArgument, "autotune table is not valid: ", e.what());
  }
}

void AutotuneTable::load(const std::string& path) {
  const auto json = read_json(path);
  if (!json.contains("autotune") || !json.at("autotune").contains(scope_)) return;
  try {
    entries_ = json.at("autotune").at(scope_).get<std::map<std::string, std::string>>();
  } catch (const nlohmann::json::exception& e) {
    CONCORD_THROW(InvalidArgument, "cost model file '", path, "': autotune table of '", scope_,
                  "' is not valid: ", e.what());
  }
}

void AutotuneTable::save(const std::string& path) const {
  namespace fs = std::filesystem;
  const fs::path parent = fs::path(path).parent_path();
  std::error_code error;
  if (!parent.empty() && !fs::exists(parent, error)) {
    fs::create_directories(parent, error);
    fs::permissions(parent, fs::perms::owner_all, fs::perm_options::replace, error);
  }
  nlohmann::json json = read_json(path);
  auto& tables = json["autotune"];
  // Tables timed another way are never read again (autotune_scope's "timing=..."): dropped.
  const auto timing = [](const std::string& scope) {
    return scope.substr(std::min(scope.find("timing="), scope.size()));
  };
  for (auto it = tables.begin(); it != tables.end();)
    it = timing(it.key()) == timing(scope_) ? std::next(it) : tables.erase(it);
  tables[scope_] = entries_;
  // Never a file that CostParams::load refuses: past its limit, this configuration's table alone.
  if (json.dump(2).size() + 1 > CostParams::kMaxFileBytes) json["autotune"] = nlohmann::json{{scope_, entries_}};
  const std::string temporary = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(temporary);
    out << json.dump(2) << "\n";
    CONCORD_ENFORCE(out.good(), InvalidArgument, "cannot write cost model file '", temporary, "'");
  }
  fs::rename(temporary, path, error);
  CONCORD_ENFORCE(!error, InvalidArgument, "cannot replace cost model file '", path, "': ", error.message());
}

TuneResult measure_fastest(Communicator& comm, const std::vector<TuneCandidate>& candidates) {
  CONCORD_ENFORCE(!candidates.empty(), InvalidArgument, "autotune: no candidate algorithm");
  using Clock = std::chrono::steady_clock;
  std::vector<double> probe_seconds;  // one call after the warm-up (scratch, page faults, sub-communicators)
  for (const auto& candidate : candidates) {
    candidate.run();
    const auto start = Clock::now();
    candidate.run();
    probe_seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  const std::vector<int> calls = agreed_calls(comm, candidates, probe_seconds);
  std::vector<std::vector<double>> rounds(candidates.size()), cpu_rounds(candidates.size());
  std::vector<size_t> finalists(candidates.size());
  for (size_t i = 0; i < finalists.size(); ++i) finalists[i] = i;
  for (int round = 0; round < kRounds; ++round) time_round(comm, candidates, calls, finalists, rounds, cpu_rounds);
  if (candidates.size() > 1) {
    finalists = agreed_finalists(comm, rounds);
    if (finalists.size() > 1)
      for (int round = 0; round < kFinalRounds; ++round)
        time_round(comm, candidates, calls, finalists, rounds, cpu_rounds);
  }
  TuneResult result;
  for (const auto& times : rounds) result.seconds.push_back(median(times));
  result.cpu_seconds = busiest_rank_cpu(comm, cpu_rounds);
  if (comm.rank() == 0) {
    result.winner = pick_winner(result.seconds, result.cpu_seconds, finalists);
    result.finalists = finalists;
  }
  std::vector<uint8_t> winner(sizeof(uint32_t));
  const uint32_t index = static_cast<uint32_t>(result.winner);
  std::memcpy(winner.data(), &index, sizeof index);
  comm.broadcast_bytes(winner, 0);
  uint32_t chosen = 0;
  std::memcpy(&chosen, winner.data(), sizeof chosen);
  CONCORD_ENFORCE(chosen < candidates.size(), InternalError, "autotune: rank 0 chose candidate ", chosen, " of ",
                  candidates.size());
  result.winner = chosen;
  if (comm.rank() != 0) result.seconds.clear();
  return result;
}

size_t pick_winner(const std::vector<double>& seconds, const std::vector<double>& cpu_seconds,
                   const std::vector<size_t>& finalists) {
  CONCORD_ENFORCE(!finalists.empty(), InvalidArgument, "autotune: no finalist");
  size_t fastest = finalists.front();
  for (const size_t i : finalists)
    if (seconds.at(i) < seconds.at(fastest)) fastest = i;
  size_t winner = fastest;
  for (const size_t i : finalists)
    if (seconds.at(i) <= kTuneTieBand * seconds.at(fastest) && cpu_seconds.at(i) < cpu_seconds.at(winner)) winner = i;
  return winner;
}

void run_in_and_out_of_place(AllreduceAlgorithm& algorithm, void* buffer, void* output, size_t count, DataType dtype,
                             ReduceOp op) {
  algorithm.start(buffer, count, dtype, op);
  run_to_completion(algorithm);
  algorithm.start_out_of_place(buffer, output, count, dtype, op);
  run_to_completion(algorithm);
}

}  // namespace concord
