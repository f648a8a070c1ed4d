#include "tools/bench/bench_report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/enforce.h"

namespace concord::bench {
namespace {

// The half-row the comparison uses: in place, except for alltoall (registry algorithms
// measure it out of place only).
bool compared_in_place(const Report& report) { return report.options.collective != Collective::kAlltoall; }

const Record* find(const Report& report, const std::string& algorithm, size_t bytes, bool in_place) {
  for (const auto& record : report.records)
    if (record.algorithm == algorithm && record.bytes == bytes && record.in_place == in_place &&
        record.measurement.measured)
      return &record;
  return nullptr;
}

double algbw(const Record& record) { return record.bytes / record.measurement.seconds / 1e9; }

std::string op_column(const Report& report) {
  return has_op(report.options.collective) ? report.options.op_name : "none";
}

void print_half(const Report& report, const Record& record) {
  const Measurement& m = record.measurement;
  if (!m.measured) {
    std::printf("   %10s %8s %8s %6s", "N/A", "N/A", "N/A", "N/A");
    return;
  }
  const double bw = algbw(record);
  std::printf("   %10.2f %8.3f %8.3f", m.seconds * 1e6, bw, bw * bus_factor(report.options.collective, report.ranks));
  if (m.wrong < 0) std::printf(" %6s", "N/A");
  else std::printf(" %6ld", m.wrong);
}

std::string bench_name_of_choice(const Report& report, const std::string& choice) {
  for (const auto& name : report.algorithms)
    if (name == choice || name == "registry:" + choice) return name;
  return "";
}

// Seconds of one in-place plus one out-of-place call of `algorithm` (< 0 if either half
// is missing): what measured selection times per repetition (run_in_and_out_of_place).
double pair_seconds(const Report& report, const std::string& algorithm, size_t bytes) {
  const Record* in = find(report, algorithm, bytes, true);
  const Record* out = find(report, algorithm, bytes, false);
  return in && out ? in->measurement.seconds + out->measurement.seconds : -1;
}

// The same check on in-place + out-of-place time, the criterion measured selection
// optimises: hvd.allreduce and hvd.allreduce_ share one choice (their results stay
// bitwise equal), so a choice fast in place but slow out of place is not the best one.
void print_pair_check(const Report& report) {
  int model_ok = 0, tuned_ok = 0, sizes = 0;
  std::string misses;
  for (const auto& [bytes, choice] : report.choices) {
    double best = -1;
    std::string best_name;
    for (const auto& name : report.algorithms) {
      const double seconds = pair_seconds(report, name, bytes);
      if (name != "auto" && name != "runtime" && seconds > 0 && (best < 0 || seconds < best)) {
        best = seconds;
        best_name = name;
      }
    }
    if (best < 0) continue;
    ++sizes;
    double model = pair_seconds(report, "auto", bytes);  // as the in-place line: the auto row if measured
    if (model < 0) model = pair_seconds(report, bench_name_of_choice(report, choice), bytes);
    model_ok += model > 0 && model <= 1.1 * best;
    const auto it = report.tuned_choices.find(bytes);
    const std::string tuned_name = it == report.tuned_choices.end() ? "" : bench_name_of_choice(report, it->second);
    const double tuned = pair_seconds(report, tuned_name, bytes);
    const bool ok = tuned > 0 && tuned <= 1.1 * best;
    tuned_ok += ok;
    if (ok) continue;
    char miss[160];
    if (tuned > 0)
      std::snprintf(miss, sizeof miss, " %zu B (%s %.2fx %s)", bytes, tuned_name.c_str(), tuned / best,
                    best_name.c_str());
    else
      std::snprintf(miss, sizeof miss, " %zu B (choice %s not benchmarked)", bytes,
                    it == report.tuned_choices.end() ? "-" : it->second.c_str());
    misses += miss;
  }
  std::printf(
      "# in place + out of place (what measured selection times): within 10%% of the best: cost model %d of "
      "%d sizes, measured selection %d of %d%s%s\n",
      model_ok, sizes, tuned_ok, sizes, misses.empty() ? "" : "; misses:", misses.c_str());
}

}  // namespace

void print_header(const Report& report) {
  const auto& o = report.options;
  std::printf("# concord-bench %s: %d ranks on %d node(s), %s, op %s, %d iterations, %d warm-up, check %s",
              collective_name(o.collective), report.ranks, report.nodes, dtype_name(o.dtype), op_column(report).c_str(),
              o.iterations, o.warmup, o.check ? "on" : "off");
  if (o.min_seconds > 0) std::printf(", at least %g s per row", o.min_seconds);
  if (o.repeats > 1) std::printf(", median of %d passes", o.repeats);
  std::printf("\n");
  std::printf("# busbw = algbw * %.3f (nccl-tests factor for %s)%s\n#\n", bus_factor(o.collective, report.ranks),
              collective_name(o.collective), o.collective == Collective::kBroadcast ? "; root 0" : "");
  std::printf("#%11s %12s %9s %6s   %10s %8s %8s %6s   %10s %8s %8s %6s\n", "", "", "", "", "out-of-place", "", "", "",
              "in-place", "", "", "");
  std::printf("#%11s %12s %9s %6s   %10s %8s %8s %6s   %10s %8s %8s %6s\n", "size", "count", "type", "redop", "time",
              "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  std::printf("#%11s %12s %9s %6s   %10s %8s %8s %6s   %10s %8s %8s %6s\n", "(B)", "(elements)", "", "", "(us)",
              "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

void print_algorithm_title(const std::string& algorithm) { std::printf("# algorithm %s\n", algorithm.c_str()); }

void print_row(const Report& report, const Record& out_of_place, const Record& in_place) {
  const Measurement& out = out_of_place.measurement;
  const Measurement& in = in_place.measurement;
  if (!out.measured && !in.measured && out.skip_reason == in.skip_reason) {
    std::printf("#  %s skips %zu B: %s\n", out_of_place.algorithm.c_str(), out_of_place.bytes, out.skip_reason.c_str());
  } else {
    for (const Record* half : {&out_of_place, &in_place})
      if (!half->measurement.measured)
        std::printf("#  %s %s skips %zu B: %s\n", half->algorithm.c_str(), half->in_place ? "in-place" : "out-of-place",
                    half->bytes, half->measurement.skip_reason.c_str());
  }
  if (out_of_place.algorithm == "auto" && out_of_place.measurement.measured)
    std::printf("#  auto picks %s for %zu B\n", out_of_place.measurement.chosen.c_str(), out_of_place.bytes);
  std::printf(" %11zu %12zu %9s %6s", out_of_place.bytes, out_of_place.count, dtype_name(report.options.dtype),
              op_column(report).c_str());
  print_half(report, out_of_place);
  print_half(report, in_place);
  std::printf("\n");
  std::fflush(stdout);
}

void print_comparison(const Report& report) {
  const bool in_place = compared_in_place(report);
  const bool with_mpi = std::find(report.algorithms.begin(), report.algorithms.end(), "mpi") != report.algorithms.end();
  std::printf(
      "#\n# comparison (%s times in us; x/mpi = mpi time / time, > 1 = faster than MPI; best excludes auto "
      "and runtime; ok = the cost model's choice is within 10%% of the best; tuned ok = the same for "
      "measured selection, CONCORD_AUTOTUNE)\n",
      in_place ? "in-place" : "out-of-place");
  std::printf("#%11s", "size");
  for (const auto& name : report.algorithms) std::printf(" %12s", name.c_str());
  if (with_mpi)
    for (const auto& name : report.algorithms)
      if (name != "mpi") std::printf(" %12s", (name + "/mpi").c_str());
  const bool tuned = !report.tuned_choices.empty();
  std::printf(" %14s %14s %3s", "best", "model choice", "ok");
  if (tuned) std::printf(" %18s %8s", "tuned choice", "tuned ok");
  std::printf("\n");
  int model_ok = 0, tuned_ok = 0, sizes = 0;
  for (const auto& [bytes, choice] : report.choices) {
    std::printf(" %11zu", bytes);
    const Record* mpi = find(report, "mpi", bytes, in_place);
    const Record* best = nullptr;
    for (const auto& name : report.algorithms) {
      const Record* record = find(report, name, bytes, in_place);
      if (record == nullptr) {
        std::printf(" %12s", "-");
        continue;
      }
      std::printf(" %12.2f", record->measurement.seconds * 1e6);
      if (name != "auto" && name != "runtime" &&
          (best == nullptr || record->measurement.seconds < best->measurement.seconds))
        best = record;
    }
    if (with_mpi)
      for (const auto& name : report.algorithms) {
        if (name == "mpi") continue;
        const Record* record = find(report, name, bytes, in_place);
        if (record == nullptr || mpi == nullptr) std::printf(" %12s", "-");
        else std::printf(" %12.2f", mpi->measurement.seconds / record->measurement.seconds);
      }
    const Record* chosen = find(report, "auto", bytes, in_place);
    if (chosen == nullptr) chosen = find(report, bench_name_of_choice(report, choice), bytes, in_place);
    // "yes" when `record` is within 10% of the best; counts it in `tally`.
    const auto within = [&](const Record* record, int& tally) {
      if (record == nullptr || best == nullptr) return "-";
      const bool ok = record->measurement.seconds <= 1.1 * best->measurement.seconds;
      tally += ok;
      return ok ? "yes" : "no";
    };
    ++sizes;
    const char* ok = within(chosen, model_ok);
    std::printf(" %14s %14s %3s", best ? best->algorithm.c_str() : "-", choice.empty() ? "-" : choice.c_str(), ok);
    if (tuned) {
      const auto it = report.tuned_choices.find(bytes);
      const std::string tuned_choice = it == report.tuned_choices.end() ? "" : it->second;
      const Record* picked = find(report, bench_name_of_choice(report, tuned_choice), bytes, in_place);
      std::printf(" %18s %8s", tuned_choice.empty() ? "-" : tuned_choice.c_str(), within(picked, tuned_ok));
    }
    std::printf("\n");
  }
  std::printf("# within 10%% of the best: cost model %d of %d sizes", model_ok, sizes);
  if (tuned) std::printf(", measured selection %d of %d", tuned_ok, sizes);
  std::printf("\n");
  if (in_place && tuned) print_pair_check(report);
  std::printf("#\n# minor page faults per call on rank 0 (getrusage ru_minflt; fresh scratch per call shows here)\n");
  std::printf("#%11s", "size");
  for (const auto& name : report.algorithms) std::printf(" %12s", name.c_str());
  std::printf("\n");
  for (const auto& [bytes, choice] : report.choices) {
    std::printf(" %11zu", bytes);
    for (const auto& name : report.algorithms) {
      const Record* record = find(report, name, bytes, in_place);
      if (record == nullptr) std::printf(" %12s", "-");
      else std::printf(" %12.1f", record->measurement.page_faults);
    }
    std::printf("\n");
  }
  std::fflush(stdout);
}

void write_json(const Report& report, const std::string& path) {
  const auto& o = report.options;
  nlohmann::json results = nlohmann::json::array();
  for (const auto& record : report.records) {
    const Measurement& m = record.measurement;
    if (!m.measured) continue;
    const double bw = algbw(record);
    results.push_back({{"collective", collective_name(o.collective)},
                       {"algorithm", record.algorithm},
                       {"chosen", m.chosen},
                       {"size", record.bytes},
                       {"count", record.count},
                       {"in_place", record.in_place},
                       {"time", m.seconds * 1e6},
                       {"algbw", bw},
                       {"busbw", bw * bus_factor(o.collective, report.ranks)},
                       {"wrong", m.wrong},
                       {"page_faults", m.page_faults},
                       {"P", report.ranks},
                       {"nodes", report.nodes}});
  }
  nlohmann::json choices = nlohmann::json::array();
  for (const auto& [bytes, choice] : report.choices) {
    choices.push_back({{"size", bytes}, {"model_choice", choice}});
    if (const auto it = report.tuned_choices.find(bytes); it != report.tuned_choices.end())
      choices.back()["tuned_choice"] = it->second;
  }
  const nlohmann::json root = {{"collective", collective_name(o.collective)},
                               {"dtype", dtype_name(o.dtype)},
                               {"op", op_column(report)},
                               {"ranks", report.ranks},
                               {"nodes", report.nodes},
                               {"iterations", o.iterations},
                               {"warmup", o.warmup},
                               {"min_seconds", o.min_seconds},
                               {"repeats", o.repeats},
                               {"units",
                                {{"size", "bytes"},
                                 {"time", "microseconds"},
                                 {"algbw", "GB/s"},
                                 {"busbw", "GB/s"},
                                 {"page_faults", "minor faults per call, rank 0"}}},
                               {"model_choices", choices},
                               {"results", results}};
  std::ofstream out(path);
  out << root.dump(1) << "\n";
  CONCORD_ENFORCE(out.good(), InvalidArgument, "cannot write '", path, "'");
}

}  // namespace concord::bench
