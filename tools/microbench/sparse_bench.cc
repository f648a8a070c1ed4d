// concord-sparsebench: the sparse allreduces of the registry (src/sparse/registry.cc:
// oktopk and the baselines dense, topka, topkdsa, gtopk, gaussiank) side by side under
// mpirun, on synthetic gradients that drift slowly from call to call, the residual kept
// between calls as in training (Li & Hoefler, PPoPP 2022, sec. 5;
// docs/algorithms.md, "Ok-Topk sparse allreduce").
//
//   mpirun -np 8 build/tools/concord-sparsebench -n 16M -d 0.01,0.02 -c 10 -w 3 -J sparse_np8.json
//
// Per density d and algorithm (k = topk_count(n, d)), over -c timed calls after -w
// warm-up calls (all with the residual carried on):
//   bytes/rank   bytes sent by the busiest rank in one call (the transport's counters,
//                max over ranks, mean over calls)
//   k-words      the same in units of k words (4k bytes): TopkA sends 2(P-1), Ok-Topk < 6
//   time_ms      time of one call on the slowest rank (max over ranks, mean over calls),
//                barrier before each call
//   |U|/k        entries of the result per k
// For Ok-Topk also the mean k-words of its threshold-reuse calls and of its re-evaluation
// (exact th_g) or repartition calls, which the spec's bound leaves out (use -w and -c in
// whole tau periods). -J writes every call too (k-words, time, |U|/k, the largest |S_i|/k
// and T/k before the volume cap, re-evaluation flag) for tools/plot/plot_sparse.py --per-call.
//   bytes/dense, time/dense   ratios to the dense allreduce of the same n (dense's time
//                includes writing its U, all n indices and values, as every algorithm's
//                includes building its U)
// Checks: every call's U must be bit-identical on all ranks (a hash compared across
// ranks), and with --check the conservation sum_i eps_i + P U == sum_i acc_i (to 1e-4
// relative, an allreduce of n doubles per call). The exit status is 1 on any failure.
// Gradients: sparse/synthetic_stream.h (slowly drifting, heavy-tailed, per-rank noise).
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "sparse/oktopk.h"
#include "sparse/sparse_allreduce.h"
#include "sparse/synthetic_stream.h"
#include "tools/common/mpi_tool.h"
#include "tools/common/sizes.h"
#include "transport/mpi_communicator.h"

using namespace concord;

namespace {

// FNV-1a over U's indices and value bits.
uint64_t hash_result(const sparse::SparseResult& result) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const void* data, size_t bytes) {
    for (size_t i = 0; i < bytes; ++i) h = (h ^ static_cast<const uint8_t*>(data)[i]) * 1099511628211ull;
  };
  mix(result.indices.data(), result.indices.size() * sizeof(int64_t));
  mix(result.values.data(), result.values.size() * sizeof(float));
  return h;
}

// Largest |sum_i (acc_i - eps_i) - P U| relative to sum_i |acc_i| over the elements.
double conservation_error(const std::vector<float>& before, const std::vector<float>& after,
                          const sparse::SparseResult& result, int P) {
  const size_t n = before.size();
  std::vector<double> local(2 * n, 0.0), global(2 * n, 0.0);
  for (size_t j = 0; j < n; ++j) {
    local[j] = static_cast<double>(before[j]) - after[j];
    local[n + j] = std::abs(before[j]);
  }
  MPI_Allreduce(local.data(), global.data(), static_cast<int>(2 * n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  for (size_t e = 0; e < result.indices.size(); ++e)
    global[result.indices[e]] -= static_cast<double>(P) * result.values[e];
  double worst = 0;
  for (size_t j = 0; j < n; ++j) worst = std::max(worst, std::abs(global[j]) / (global[n + j] + 1e-30));
  return worst;
}

// One timed call (--per-call): busiest rank's bytes, slowest rank's time, |U|; for Ok-Topk
// the largest |S_i| candidates over ranks, T, and whether the call re-evaluated th_g
// exactly or repartitioned (the calls the spec leaves out of the 6k-word bound).
struct Call {
  int call = 0;
  double bytes = 0, seconds = 0, entries = 0, local_candidates = 0, global_candidates = 0;
  bool reevaluation = false;
};

struct Row {
  std::string algorithm;
  double density = 0;
  int64_t k = 0;
  double bytes = 0;    // busiest rank, mean over calls
  double seconds = 0;  // slowest rank, mean over calls
  double entries = 0;  // |U|, mean over calls
  std::vector<Call> calls;
  /// Mean bytes over the calls with / without a re-evaluation (0 when there are none).
  double mean_bytes(bool reevaluation) const {
    double sum = 0;
    int count = 0;
    for (const Call& c : calls)
      if (c.reevaluation == reevaluation) sum += c.bytes, ++count;
    return count > 0 ? sum / count : 0;
  }
};

// Runs one algorithm at one density; counts failed checks in `failures`.
Row measure(const std::string& name, int64_t n, double density, double max_overshoot, int calls, int warmup, bool check,
            uint64_t seed, int& failures) {
  const int P = [] {
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return size;
  }();
  const int rank = [] {
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
  }();
  MpiCommunicator comm(MPI_COMM_WORLD);
  sparse::SparseOptions options;
  options.density = density;
  options.max_overshoot = max_overshoot;
  auto algorithm = sparse::make_sparse_allreduce(name, comm, options);
  sparse::SyntheticGradientStream stream(n, rank, seed);
  std::vector<float> acc(static_cast<size_t>(n), 0.0f), before;
  sparse::SparseResult result;
  Row row{name, density, sparse::topk_count(n, density)};
  for (int t = 0; t < warmup + calls; ++t) {
    stream.add_to(acc.data(), t);
    if (check) before = acc;
    MPI_Barrier(MPI_COMM_WORLD);
    comm.reset_counters();
    const double start = MPI_Wtime();
    algorithm->allreduce(acc.data(), n, result);
    const auto* oktopk = dynamic_cast<const sparse::OkTopk*>(algorithm.get());
    double mine[4] = {MPI_Wtime() - start, static_cast<double>(comm.counters().bytes_sent),
                      oktopk ? static_cast<double>(oktopk->trace().local_candidates) : 0,
                      oktopk ? static_cast<double>(oktopk->trace().global_candidates) : 0},
           worst[4];
    MPI_Allreduce(mine, worst, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    const uint64_t h = hash_result(result);
    uint64_t lo = 0, hi = 0;
    MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    if (lo != hi) {
      ++failures;
      if (rank == 0) std::printf("# %s d=%g call %d: U differs between ranks\n", name.c_str(), density, t);
    }
    if (check) {
      const double error = conservation_error(before, acc, result, P);
      if (error > 1e-4) {
        ++failures;
        if (rank == 0) std::printf("# %s d=%g call %d: conservation error %.3g\n", name.c_str(), density, t, error);
      }
    }
    if (t < warmup) continue;
    row.seconds += worst[0] / calls;
    row.bytes += worst[1] / calls;
    row.entries += static_cast<double>(result.indices.size()) / calls;
    const bool reevaluation = oktopk && (oktopk->trace().exact_global || oktopk->trace().repartitioned);
    row.calls.push_back(
        {t, worst[1], worst[0], static_cast<double>(result.indices.size()), worst[2], worst[3], reevaluation});
  }
  return row;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  for (size_t at = 0; at <= text.size();) {
    const size_t comma = std::min(text.find(',', at), text.size());
    if (comma > at) items.push_back(text.substr(at, comma - at));
    at = comma + 1;
  }
  return items;
}

}  // namespace

int main(int argc, char** argv) {
  tools::MpiTool mpi(argc, argv);
  CLI::App app{"concord-sparsebench: bytes per rank and time of the sparse allreduces (Ok-Topk and baselines)"};
  std::string elements = "16M", densities = "0.01,0.02", algorithms = "all", json_path;
  int calls = 10, warmup = 3;
  uint64_t seed = 1;
  double max_overshoot = sparse::SparseOptions{}.max_overshoot;
  bool check = false;
  app.add_option("-n,--elements", elements, "gradient length n in float32 elements (K, M, G = 2^10, 2^20, 2^30)");
  app.add_option("-d,--densities", densities, "comma-separated densities d (k = max(1, floor(n d)))");
  app.add_option("-c,--calls", calls, "timed calls per algorithm and density")->check(CLI::PositiveNumber);
  app.add_option("-w,--warmup", warmup, "untimed calls first (residual kept)")->check(CLI::NonNegativeNumber);
  app.add_option("-a,--algorithms", algorithms, "comma-separated sparse allreduces, or all");
  app.add_option("-J,--json", json_path, "write the rows to this JSON file (rank 0)");
  app.add_option("--seed", seed, "seed of the synthetic gradients");
  app.add_option("--max-overshoot", max_overshoot,
                 "Ok-Topk's volume cap eps (SparseOptions.max_overshoot; < 0: off, the spec's feedback only)");
  app.add_flag("--check", check, "also check conservation every call (an allreduce of n doubles)");
  if (const auto code = mpi.parse(app, argc, argv)) return *code;
  int failures = 0;
  try {
    const auto n = static_cast<int64_t>(tools::parse_size(elements));
    const std::vector<std::string> names =
        algorithms == "all" ? sparse::sparse_allreduce_names() : split_list(algorithms);
    std::vector<Row> rows;
    if (mpi.rank() == 0)
      std::printf(
          "# %d ranks, n = %lld float32, %d calls after %d warm-up; bytes: busiest rank, time: slowest rank\n"
          "%-10s %8s %10s %14s %9s %10s %7s %11s %10s\n",
          mpi.size(), static_cast<long long>(n), calls, warmup, "algorithm", "density", "k", "bytes/rank", "k-words",
          "time_ms", "|U|/k", "bytes/dense", "time/dense");
    for (const std::string& d : split_list(densities)) {
      const double density = std::stod(d);
      std::vector<Row> block;
      for (const std::string& name : names)
        block.push_back(measure(name, n, density, max_overshoot, calls, warmup, check, seed, failures));
      const auto dense = std::find_if(block.begin(), block.end(), [](const Row& r) { return r.algorithm == "dense"; });
      for (const Row& row : block) {
        const double k_words = row.k > 0 ? row.bytes / (4.0 * row.k) : 0;
        const double bytes_ratio = dense != block.end() && dense->bytes > 0 ? row.bytes / dense->bytes : 0;
        const double time_ratio = dense != block.end() && dense->seconds > 0 ? row.seconds / dense->seconds : 0;
        if (mpi.rank() == 0)
          std::printf("%-10s %8g %10lld %14.0f %9.2f %10.3f %7.2f %11.4f %10.3f\n", row.algorithm.c_str(), density,
                      static_cast<long long>(row.k), row.bytes, k_words, row.seconds * 1e3,
                      row.k > 0 ? row.entries / row.k : 0, bytes_ratio, time_ratio);
        if (mpi.rank() == 0 && row.algorithm == "oktopk" && row.k > 0)
          std::printf("#   oktopk k-words: %.2f on threshold-reuse calls, %.2f on re-evaluation/repartition calls\n",
                      row.mean_bytes(false) / (4.0 * row.k), row.mean_bytes(true) / (4.0 * row.k));
        rows.push_back(row);
      }
    }
    if (mpi.rank() == 0 && !json_path.empty()) {
      nlohmann::json out = {{"ranks", mpi.size()}, {"n", n}, {"calls", calls}, {"warmup", warmup}};
      out["rows"] = nlohmann::json::array();
      for (const Row& row : rows) {
        const double word_bytes = 4.0 * std::max<int64_t>(row.k, 1);
        nlohmann::json calls_json = nlohmann::json::array();
        for (const Call& c : row.calls)
          calls_json.push_back({{"call", c.call},
                                {"k_words", c.bytes / word_bytes},
                                {"time_s", c.seconds},
                                {"u_over_k", c.entries / std::max<int64_t>(row.k, 1)},
                                {"local_candidates_over_k", c.local_candidates / std::max<int64_t>(row.k, 1)},
                                {"global_candidates_over_k", c.global_candidates / std::max<int64_t>(row.k, 1)},
                                {"reevaluation", c.reevaluation}});
        out["rows"].push_back({{"algorithm", row.algorithm},
                               {"density", row.density},
                               {"k", row.k},
                               {"bytes_per_rank", row.bytes},
                               {"k_words", row.bytes / word_bytes},
                               {"k_words_reuse", row.mean_bytes(false) / word_bytes},
                               {"k_words_reevaluation", row.mean_bytes(true) / word_bytes},
                               {"time_s", row.seconds},
                               {"result_entries", row.entries},
                               {"calls", calls_json}});
      }
      std::ofstream(json_path) << out.dump(2) << "\n";
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "concord-sparsebench (rank %d): %s\n", mpi.rank(), error.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (failures > 0 && mpi.rank() == 0) std::printf("# %d failed checks\n", failures);
  return failures > 0 ? 1 : 0;
}
