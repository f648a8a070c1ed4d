// concord-topkbench: time of the top-k selection functions of src/sparse/topk.h on one
// core, next to a full std::sort-based top-k, on float32 N(0, 1) data. No MPI.
//
//   concord-topkbench [-s 1M,4M,16M,64M] [-d 0.01] [-n 5] [-w 1] [--sort-iters 1] [--seed 1]
//
// Per size n (elements; K/M/G = 2^10/2^20/2^30) and k = topk_count(n, density), the median
// milliseconds of `iters` calls after `warmup` untimed ones, for:
//   topk_exact          exact top-k indices (ascending)
//   kth_largest         kth_largest_magnitude (the exact threshold)
//   select_above        select_above(x, k-th largest magnitude, >=)
//   gaussian_th         gaussian_threshold with its 3 corrections (count passes included)
//   sort_topk           the reference: sort all n (|x| descending, index ascending) as
//                       packed 64-bit keys with std::sort, keep k, sort those by index
// and speedup = sort_topk / topk_exact. Every row checks the results against the sort:
// topk_exact must equal it, kth_largest must equal the k-th magnitude, select_above must
// return exactly the indices with |x| >= that magnitude (a superset of the top-k); on any
// mismatch the tool prints it and exits 1.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "sparse/topk.h"
#include "tools/common/sizes.h"
#include "tools/common/timing.h"

namespace {

using concord::sparse::gaussian_threshold;
using concord::sparse::kth_largest_magnitude;
using concord::sparse::select_above;
using concord::sparse::topk_count;
using concord::sparse::topk_exact;

// Median milliseconds of `iters` calls of `body` after `warmup` untimed ones.
template <typename Body>
double median_ms(int warmup, int iters, Body&& body) {
  return 1e3 * concord::tools::median_seconds(warmup, iters, body);
}

// Full-sort top-k: one 64-bit key per element, (0x7fffffff - |x| bits) << 32 | index, so
// ascending order is |x| descending then index ascending (n < 2^32).
void sort_topk(const std::vector<float>& x, int64_t k, std::vector<uint64_t>& keys, std::vector<int64_t>& out) {
  const size_t n = x.size();
  keys.resize(n);
  for (size_t j = 0; j < n; ++j) {
    uint32_t bits;
    std::memcpy(&bits, &x[j], 4);
    keys[j] = (static_cast<uint64_t>(0x7fffffffu - (bits & 0x7fffffffu)) << 32) | j;
  }
  std::sort(keys.begin(), keys.end());
  out.resize(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) out[static_cast<size_t>(i)] = static_cast<int64_t>(keys[i] & 0xffffffffu);
  std::sort(out.begin(), out.end());
}

// N(0, 1) float32 data from a fixed seed (per size), generated in blocks of independent
// streams so 64M elements take well under a second of setup.
std::vector<float> gaussian_data(int64_t n, uint64_t seed) {
  std::vector<float> x(static_cast<size_t>(n));
  constexpr int64_t kStream = 1 << 16;
  for (int64_t base = 0; base < n; base += kStream) {
    std::mt19937_64 gen(seed * 1000003u + static_cast<uint64_t>(base / kStream));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int64_t end = std::min(n, base + kStream);
    for (int64_t j = base; j < end; ++j) x[static_cast<size_t>(j)] = normal(gen);
  }
  return x;
}

// Returns "" when the results agree with the sort, else what differs.
std::string check_row(const std::vector<float>& x, int64_t k, const std::vector<int64_t>& sorted_top,
                      const std::vector<int64_t>& top, float kth, const std::vector<int64_t>& above) {
  if (top != sorted_top) {
    for (size_t i = 0; i < std::min(top.size(), sorted_top.size()); ++i) {
      if (top[i] != sorted_top[i]) {
        return "topk_exact element " + std::to_string(i) + ": index " + std::to_string(top[i]) + " != sort's " +
               std::to_string(sorted_top[i]);
      }
    }
    return "topk_exact size " + std::to_string(top.size()) + " != " + std::to_string(sorted_top.size());
  }
  float want = INFINITY;
  for (int64_t j : sorted_top) want = std::min(want, std::fabs(x[static_cast<size_t>(j)]));
  if (k > 0 && kth != want) return "kth_largest " + std::to_string(kth) + " != sort's " + std::to_string(want);
  size_t expected = 0;
  for (float v : x) expected += std::fabs(v) >= kth;
  if (above.size() != expected) {
    return "select_above returned " + std::to_string(above.size()) + " indices, " + std::to_string(expected) + " pass";
  }
  for (size_t i = 0; i < above.size(); ++i) {
    const int64_t j = above[i];
    if (std::fabs(x[static_cast<size_t>(j)]) < kth || (i > 0 && j <= above[i - 1])) {
      return "select_above element " + std::to_string(i) + " (index " + std::to_string(j) + ") wrong";
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"concord-topkbench: top-k selection (src/sparse/topk.h) vs a full sort, one core"};
  std::vector<std::string> size_texts = {"1M", "4M", "16M", "64M"};
  double density = 0.01;
  int iters = 5, warmup = 1, sort_iters = 1;
  uint64_t seed = 1;
  app.add_option("-s,--sizes", size_texts, "element counts (K, M, G = 2^10, 2^20, 2^30)")->delimiter(',');
  app.add_option("-d,--density", density, "k = max(1, floor(n * density))")->check(CLI::Range(1e-9, 1.0));
  app.add_option("-n,--iters", iters, "timed calls per function and size (median reported)")
      ->check(CLI::Range(1, 1000));
  app.add_option("-w,--warmup", warmup, "untimed calls before timing")->check(CLI::Range(0, 1000));
  app.add_option("--sort-iters", sort_iters, "timed calls of the full sort (slow at 64M)")->check(CLI::Range(1, 1000));
  app.add_option("--seed", seed, "data seed");
  CLI11_PARSE(app, argc, argv);

  std::vector<int64_t> sizes;
  try {
    for (const auto& text : size_texts) sizes.push_back(static_cast<int64_t>(concord::tools::parse_size(text)));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "concord-topkbench: %s\n", error.what());
    return 1;
  }
  std::printf("# concord-topkbench: float32 N(0,1), density %g, median of %d (sort: %d) calls, ms\n", density, iters,
              sort_iters);
  std::printf("%11s %9s %11s %11s %12s %11s %11s %8s\n", "n", "k", "topk_exact", "kth_largest", "select_above",
              "gaussian_th", "sort_topk", "speedup");
  int failures = 0;
  for (int64_t n : sizes) {
    if (n <= 0 || n >= (int64_t{1} << 32)) {
      std::fprintf(stderr, "concord-topkbench: size %lld outside [1, 2^32)\n", static_cast<long long>(n));
      return 1;
    }
    const std::vector<float> x = gaussian_data(n, seed);
    const int64_t k = topk_count(n, density);
    std::vector<int64_t> top, above, sorted_top;
    std::vector<uint64_t> sort_keys;
    float kth = 0, gth = 0;
    const double t_topk = median_ms(warmup, iters, [&] { topk_exact(x.data(), n, k, top); });
    const double t_kth = median_ms(warmup, iters, [&] { kth = kth_largest_magnitude(x.data(), n, k); });
    const double t_above = median_ms(warmup, iters, [&] { select_above(x.data(), n, kth, false, above); });
    const double t_gauss = median_ms(warmup, iters, [&] { gth = gaussian_threshold(x.data(), n, density); });
    const double t_sort = median_ms(0, sort_iters, [&] { sort_topk(x, k, sort_keys, sorted_top); });
    std::printf("%11lld %9lld %11.3f %11.3f %12.3f %11.3f %11.3f %7.1fx\n", static_cast<long long>(n),
                static_cast<long long>(k), t_topk, t_kth, t_above, t_gauss, t_sort, t_sort / t_topk);
    const std::string error = check_row(x, k, sorted_top, top, kth, above);
    if (!error.empty()) {
      std::fprintf(stderr, "MISMATCH n=%lld k=%lld: %s\n", static_cast<long long>(n), static_cast<long long>(k),
                   error.c_str());
      ++failures;
    }
    if (!std::isfinite(gth)) {
      std::fprintf(stderr, "MISMATCH n=%lld: gaussian_threshold %g is not finite\n", static_cast<long long>(n), gth);
      ++failures;
    }
  }
  std::fflush(stdout);
  return failures == 0 ? 0 : 1;
}
