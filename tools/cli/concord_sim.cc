// concord-sim: predicted allreduce times at scale from the simulator (src/sim/,
// docs/simulator.md), with the machine constants of CostParams::from_env() (the calibrated
// file of concord-calibrate, CONCORD_COST_* overrides).
//
//   concord-sim                                  # sweep: all algorithms, 4 B..1 GiB (x4),
//                                                #   P = 2..32768 (powers of two), flat switch
//   concord-sim -r 8 -b 1K -e 64M -P 16,64       # two-level: nodes of 8 ranks
//   concord-sim --best-only -J sweep.json        # best algorithm per point; all rows as JSON
//   concord-sim --validate measured.json         # predicted vs concord-bench -J measurements
//   concord-sim --validate m.json -r 1 --link-bucket 256K --line-beta 4e-10 --inter-gap 2e-6
//                                                # the same on the tbf testbed (token buckets,
//                                                #   LogGP gap)
//   concord-sim --turnaround -b 64M -e 64M -P 64 # gradient turnaround, trees vs C-Cube
//   concord-sim --list                           # the registry's allreduces: modelled or why not
//
// Sweep columns: size (bytes), P, algorithm, predicted time (us), busbw (GB/s, nccl-tests
// allreduce factor 2(P-1)/P), method (step: event-by-event simulation; closed: closed form).
// Then one line per (size, P) naming the fastest algorithm.
// --turnaround columns: size, P, algorithm, turnaround (us: until the first chunk is final on
// every rank, step by step), total time (us), for tree, overlapped_tree, double_tree and
// overlapped_double_tree.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "algorithms/cost_model.h"
#include "concord/errors.h"
#include "sim/models.h"
#include "sim/simulator.h"
#include "sim/sweep.h"
#include "sim/validate.h"

using namespace concord;
using namespace concord::sim;

namespace {

void print_sweep(const std::vector<SweepRow>& rows, bool best_only) {
  if (!best_only) {
    std::printf("%12s %6s %-20s %14s %10s %7s\n", "size", "P", "algorithm", "time(us)", "busbw", "method");
    for (const SweepRow& row : rows)
      std::printf("%12zu %6d %-20s %14.2f %10.3f %7s\n", row.bytes, row.ranks, row.algorithm.c_str(), row.seconds * 1e6,
                  row.busbw / 1e9, method_name(row.method));
    std::printf("\n");
  }
  std::printf("# best algorithm per (size, P)\n%12s %6s %-20s %14s %10s\n", "size", "P", "best", "time(us)", "busbw");
  for (const SweepRow& row : best_per_point(rows))
    std::printf("%12zu %6d %-20s %14.2f %10.3f\n", row.bytes, row.ranks, row.algorithm.c_str(), row.seconds * 1e6,
                row.busbw / 1e9);
}

void write_json(const std::string& path, const std::vector<SweepRow>& rows, const CostParams& params,
                int ranks_per_node) {
  nlohmann::json json;
  json["params"] = {{"alpha", params.alpha},
                    {"beta", params.beta},
                    {"gamma", params.gamma},
                    {"inter_alpha", params.inter_alpha},
                    {"inter_beta", params.inter_beta}};
  json["ranks_per_node"] = ranks_per_node;
  json["records"] = nlohmann::json::array();
  for (const SweepRow& row : rows)
    json["records"].push_back({{"collective", "allreduce"},
                               {"algorithm", row.algorithm},
                               {"size", row.bytes},
                               {"P", row.ranks},
                               {"time", row.seconds * 1e6},
                               {"busbw", row.busbw / 1e9},
                               {"method", method_name(row.method)}});
  std::ofstream out(path);
  out << json.dump(1) << "\n";
  if (!out.good()) throw InvalidArgument("cannot write '" + path + "'");
}

void print_turnaround(const SweepSpec& spec, const CostParams& params) {
  std::printf("%12s %6s %-24s %16s %14s\n", "size", "P", "algorithm", "turnaround(us)", "time(us)");
  for (const size_t bytes : spec.sizes)
    for (const int P : spec.ranks) {
      const Topology topology = Topology::from_params(P, spec.ranks_per_node, params);
      const Problem problem = allreduce_problem(bytes, topology, spec.chunk_bytes);
      for (const char* name : {"tree", "overlapped_tree", "double_tree", "overlapped_double_tree"}) {
        const double turnaround = gradient_turnaround(name, problem, topology, params.gamma);
        const double total = simulate(find_simulated(name).schedule(problem, topology), topology, params.gamma).seconds;
        std::printf("%12zu %6d %-24s %16.2f %14.2f\n", bytes, P, name, turnaround * 1e6, total * 1e6);
      }
    }
}

// The registry's allreduce algorithms (their own names and descriptions) and, for each
// one the simulator does not model, why.
void print_list() {
  for (const SimAlgorithm& algorithm : simulated_algorithms())
    std::printf("%-24s %s\n", algorithm.name.c_str(), algorithm.description.c_str());
  for (const auto& [name, reason] : unmodelled_allreduces())
    std::printf("%-24s not modelled: %s\n", name.c_str(), reason.c_str());
}

void print_validation(const std::vector<ValidationRow>& rows) {
  std::printf("%-20s %12s %4s %8s %14s %14s %9s %7s\n", "algorithm", "size", "P", "in_place", "measured(us)",
              "predicted(us)", "rel.err", "method");
  double sum = 0;
  for (const ValidationRow& row : rows) {
    std::printf("%-20s %12zu %4d %8d %14.2f %14.2f %+8.1f%% %7s\n", row.measured.algorithm.c_str(), row.measured.bytes,
                row.measured.ranks, row.measured.in_place ? 1 : 0, row.measured.seconds * 1e6,
                row.predicted_seconds * 1e6, 100 * row.relative_error, method_name(row.method));
    sum += std::abs(row.relative_error);
  }
  if (rows.empty()) return;
  std::map<size_t, std::pair<double, int>> by_size;  // bytes -> (sum of |error|, points)
  for (const ValidationRow& row : rows) {
    auto& [size_sum, points] = by_size[row.measured.bytes];
    size_sum += std::abs(row.relative_error);
    ++points;
  }
  std::printf("# mean |relative error| by size:");
  size_t worst = 0;
  double worst_error = -1;
  for (const auto& [bytes, size_sum_points] : by_size) {
    const double mean = size_sum_points.first / size_sum_points.second;
    std::printf(" %zu B %.1f%%;", bytes, 100 * mean);
    if (mean > worst_error) {
      worst = bytes;
      worst_error = mean;
    }
  }
  std::printf(" worst size %zu B (%.1f%%)\n", worst, 100 * worst_error);
  const auto unsteady = std::count_if(rows.begin(), rows.end(), [](const ValidationRow& row) { return !row.steady; });
  if (unsteady > 0)
    std::printf("# warning: %td predictions had not reached the buckets' steady state after the last call\n", unsteady);
  std::printf("# %zu points, mean |relative error| %.1f%%\n", rows.size(), 100 * sum / rows.size());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"concord-sim: simulated allreduce times at scale (docs/simulator.md)"};
  size_t min_bytes = 4, max_bytes = size_t{1} << 30, chunk_bytes = default_chunk_bytes();
  double factor = 4;
  int min_ranks = 2, max_ranks = 32768, ranks_per_node = 1;
  std::vector<int> ranks_list;
  std::vector<std::string> algorithms;
  std::string json_path, validate_path;
  bool best_only = false, turnaround = false, list = false;
  uint64_t max_messages = SimOptions{}.max_messages;
  app.add_option("-b,--minbytes", min_bytes, "smallest message (bytes; K, M, G suffixes)")
      ->transform(CLI::AsSizeValue(false));
  app.add_option("-e,--maxbytes", max_bytes, "largest message (bytes; K, M, G suffixes)")
      ->transform(CLI::AsSizeValue(false));
  app.add_option("-f,--stepfactor", factor, "multiply the size by this factor between rows")
      ->check(CLI::Range(1.0001, 1e6));
  app.add_option("--min-ranks", min_ranks, "smallest world size (powers of two from here)")->check(CLI::PositiveNumber);
  app.add_option("--max-ranks", max_ranks, "largest world size")->check(CLI::Range(1, 1 << 20));
  app.add_option("-P,--ranks", ranks_list, "comma-separated world sizes (instead of powers of two)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  app.add_option("-r,--ranks-per-node", ranks_per_node,
                 "ranks per node: 1 = flat switch at inter-node constants; >1 = two-level topology "
                 "(for --validate default: all ranks on one node)")
      ->check(CLI::PositiveNumber);
  app.add_option("-a,--algorithms", algorithms, "comma-separated algorithms (default: all modelled)")->delimiter(',');
  app.add_option("-c,--chunk-bytes", chunk_bytes, "pipelining chunk (CONCORD_RING_CHUNK_BYTES)")
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--max-messages", max_messages, "largest schedule simulated step by step; larger: closed form");
  app.add_flag("--best-only", best_only, "print only the best algorithm per (size, P)");
  app.add_flag("--turnaround", turnaround,
               "gradient turnaround (first chunk final on every rank) of the trees vs C-Cube's overlapped trees, "
               "step by step");
  app.add_flag("--list", list, "list the registry's allreduce algorithms and which ones are modelled");
  app.add_option("-J,--json", json_path, "also write every row as JSON (records like concord-bench -J)");
  auto* validate_option =
      app.add_option("--validate", validate_path, "compare with concord-bench -J measurements (time us, size bytes)");
  LinkShaping shaping;
  auto* bucket_option =
      app.add_option("--link-bucket", shaping.bucket_bytes,
                     "for --validate: the inter-node links are token buckets of this many bytes (the testbed's tbf "
                     "--burst, e.g. 256K), predicted in steady state; needs --line-beta")
          ->transform(CLI::AsSizeValue(false));
  auto* line_option =
      app.add_option("--line-beta", shaping.line_beta,
                     "for --link-bucket: seconds per byte of the unshaped link (concord-calibrate's inter_beta on "
                     "scripts/cluster.sh --rate none)")
          ->check(CLI::PositiveNumber);
  bucket_option->needs(line_option)->needs(validate_option);
  line_option->needs(bucket_option);
  app.add_option("--inter-gap", shaping.gap,
                 "for --validate: seconds of inter_alpha during which a message occupies the links (LogGP's gap; "
                 "concord-calibrate's inter_gap); the rest overlaps with other messages. Default: all of inter_alpha")
      ->check(CLI::NonNegativeNumber)
      ->needs(validate_option);
  CLI11_PARSE(app, argc, argv);

  try {
    if (list) {
      print_list();
      return 0;
    }
    const CostParams params = CostParams::from_env();
    std::printf("# alpha %.3g s, beta %.3g s/B, gamma %.3g s/B, inter_alpha %.3g s, inter_beta %.3g s/B\n",
                params.alpha, params.beta, params.gamma, params.inter_alpha, params.inter_beta);
    if (*validate_option) {
      const int R = app.count("--ranks-per-node") > 0 ? ranks_per_node : 0;
      if (shaping.bucket_bytes > 0)
        std::printf(
            "# inter-node links: token bucket of %.0f bytes, line rate %.3g s/B, steady state of back-to-back calls\n",
            shaping.bucket_bytes, shaping.line_beta);
      if (shaping.gap >= 0)
        std::printf("# inter-node links: a message occupies them for %.3g s of inter_alpha (LogGP gap)\n", shaping.gap);
      print_validation(validate(read_measurements(validate_path), params, R, chunk_bytes, shaping));
      return 0;
    }
    SweepSpec spec;
    spec.sizes = geometric_sizes(min_bytes, max_bytes, factor);
    spec.ranks = ranks_list.empty() ? power_of_two_ranks(min_ranks, max_ranks) : ranks_list;
    spec.algorithms = algorithms;
    spec.ranks_per_node = ranks_per_node;
    spec.chunk_bytes = chunk_bytes;
    spec.options.max_messages = max_messages;
    std::printf("# topology: %s\n", ranks_per_node == 1
                                        ? "flat switch (inter-node constants)"
                                        : ("two-level, " + std::to_string(ranks_per_node) + " ranks per node").c_str());
    if (turnaround) {
      print_turnaround(spec, params);
      return 0;
    }
    const auto rows = run_sweep(spec, params);
    print_sweep(rows, best_only);
    if (!json_path.empty()) write_json(json_path, rows, params, ranks_per_node);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "concord-sim: %s\n", e.what());
    return 1;
  }
  return 0;
}
