// Top-k selection (src/sparse/topk.h). Exact selection works on magnitude keys
// (topk_scan.h: |x| bits, a total order in which a NaN ranks above +inf), so every result
// is deterministic.
//
// Sampled selection (n >= 2^15, k/n small): read s sample keys (s/16 cache-line runs at
// stratified positions of a fixed-seed jitter; s = n/64 clamped to [4096, 2^16]), pick the
// candidate c = r-th largest sample key with r = s*k/n + 4 sqrt(s*k/n) + 8 (about four
// standard deviations of the binomial count above the expected one), gather every index
// with key >= c in one vectorised pass (topk_scan.h), and select exactly among those
// candidates (radix selection on their keys, then std::nth_element within one bin). When
// fewer than k entries pass (the sample missed), retry once with rank 4r + 64; then, or
// when r >= s/2, select among all n. Every route gives the same answer: the k-th largest
// key is the same whenever at least k keys are >= c. Cost: one streaming pass over 4n
// bytes plus O(s + k) work; per-thread scratch is reused between calls.
#include "sparse/topk.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <numeric>

#include "common/enforce.h"
#include "sparse/topk_scan.h"

namespace concord::sparse {
namespace {

using detail::key_value;
using detail::magnitude_key;

// Below this size selection over all n is as fast as sampling.
constexpr int64_t kMinSampledN = 1 << 15;

// splitmix64: the fixed-seed generator of the sample positions.
uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Per-thread buffers of the sampled route, grow-only, so that repeated calls (one per
// training step) neither allocate nor page-fault; released when the thread exits. The
// route over all n uses call-local vectors instead (it would pin 8n bytes).
struct Scratch {
  std::vector<uint32_t> sample;
  std::vector<int64_t> candidates;
  std::vector<uint32_t> keys;
  std::vector<uint32_t> work;
};
Scratch& scratch() {
  thread_local Scratch buffers;
  return buffers;
}

// The k-th largest of keys (1 <= k <= keys.size()); reorders keys.
uint32_t nth_largest(std::vector<uint32_t>& keys, int64_t k) {
  auto kth = keys.begin() + (k - 1);
  std::nth_element(keys.begin(), kth, keys.end(), std::greater<uint32_t>());
  return *kth;
}

// The k-th largest of keys[0..m) (1 <= k <= m), keys unchanged; `work` is scratch. Radix
// selection: one pass for the range [lo, hi], one histogram of (key - lo) >> shift into at
// most 4096 bins, one pass copying the keys of the bin that holds the k-th into `work`,
// then std::nth_element on those (about m / 4096 keys on smooth data).
uint32_t kth_largest_key(const uint32_t* keys, int64_t m, int64_t k, std::vector<uint32_t>& work) {
  constexpr int kBinBits = 12;
  if (m <= (int64_t{1} << kBinBits)) {
    work.assign(keys, keys + m);
    return nth_largest(work, k);
  }
  uint32_t lo = keys[0], hi = keys[0];
  for (int64_t i = 1; i < m; ++i) {
    lo = std::min(lo, keys[i]);
    hi = std::max(hi, keys[i]);
  }
  if (lo == hi) return lo;
  const int shift = std::max(0, static_cast<int>(std::bit_width(hi - lo)) - kBinBits);
  std::vector<int64_t> histogram(size_t{1} << kBinBits, 0);
  for (int64_t i = 0; i < m; ++i) ++histogram[(keys[i] - lo) >> shift];
  auto bin = static_cast<int64_t>((hi - lo) >> shift);
  int64_t above = 0;  // keys in the bins above `bin`
  while (above + histogram[static_cast<size_t>(bin)] < k) above += histogram[static_cast<size_t>(bin--)];
  work.clear();
  work.reserve(static_cast<size_t>(histogram[static_cast<size_t>(bin)]));
  const auto target = static_cast<uint32_t>(bin);
  for (int64_t i = 0; i < m; ++i) {
    if (((keys[i] - lo) >> shift) == target) work.push_back(keys[i]);
  }
  return nth_largest(work, k - above);
}

// Fills `candidates` (ascending) with the indices whose key is >= a sampled candidate
// threshold and `keys` with their keys; returns true when at least k of them pass (then
// the k-th largest key of x is among them), false when the caller must select among all n.
// The sample is s keys read as s/16 runs of 16 consecutive elements (one cache line each)
// at stratified, jittered positions; on a miss one retry takes a 4x lower sample rank.
bool sampled_candidates(const float* x, int64_t n, int64_t k, std::vector<uint32_t>& sample,
                        std::vector<int64_t>& candidates, std::vector<uint32_t>& keys) {
  if (n < kMinSampledN) return false;
  constexpr int64_t kRun = 16;
  const int64_t runs = std::clamp<int64_t>(n / (64 * kRun), 256, (1 << 16) / kRun);
  const int64_t s = runs * kRun;
  const double expected = static_cast<double>(s) * static_cast<double>(k) / static_cast<double>(n);
  const auto r = static_cast<int64_t>(std::ceil(expected + 4 * std::sqrt(expected) + 8));
  if (r >= s / 2) return false;
  sample.resize(static_cast<size_t>(s));
  const double stride = static_cast<double>(n - kRun) / static_cast<double>(runs);
  for (int64_t j = 0; j < runs; ++j) {
    const double jitter = static_cast<double>(mix(static_cast<uint64_t>(j)) >> 11) * 0x1.0p-53;
    const auto pos = std::min<int64_t>(n - kRun, static_cast<int64_t>((static_cast<double>(j) + jitter) * stride));
    for (int64_t i = 0; i < kRun; ++i) sample[static_cast<size_t>(j * kRun + i)] = magnitude_key(x[pos + i]);
  }
  for (int64_t rank : {r, std::min(s, 4 * r + 64)}) {
    const uint32_t candidate = nth_largest(sample, rank);
    candidates.clear();
    keys.clear();
    detail::append_key_at_least(x, n, candidate, candidates, &keys);
    if (static_cast<int64_t>(candidates.size()) >= k) return true;
  }
  return false;
}

// Exact top-k among the m entries with keys[i] = magnitude key of x[index_of(i)], i < m,
// ascending in index: every key above the k-th largest key T, then the lowest-index
// entries with key == T until k.
template <typename IndexOf>
void select_among(const std::vector<uint32_t>& keys, std::vector<uint32_t>& work, IndexOf index_of, int64_t k,
                  std::vector<int64_t>& out) {
  const auto m = static_cast<int64_t>(keys.size());
  const uint32_t kth = kth_largest_key(keys.data(), m, k, work);
  int64_t above = 0;
  for (int64_t i = 0; i < m; ++i) above += keys[static_cast<size_t>(i)] > kth;
  int64_t ties = k - above;  // >= 1: T itself is among the k largest
  out.resize(static_cast<size_t>(k));
  int64_t w = 0;
  for (int64_t i = 0; i < m && w < k; ++i) {
    const uint32_t key = keys[static_cast<size_t>(i)];
    if (key > kth || (key == kth && ties-- > 0)) out[static_cast<size_t>(w++)] = index_of(i);
  }
}

// Keys of all n elements (the route without sampling).
void all_keys(const float* x, int64_t n, std::vector<uint32_t>& keys) {
  keys.resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) keys[static_cast<size_t>(j)] = magnitude_key(x[j]);
}

void check_buffer(const float* x, int64_t n, const char* what) {
  CONCORD_ENFORCE(n >= 0, InvalidArgument, what, ": negative length n = ", n);
  CONCORD_ENFORCE(n == 0 || x != nullptr, InvalidArgument, what, ": null data with n = ", n);
}

}  // namespace

int64_t topk_count(int64_t n, double density) {
  CONCORD_ENFORCE(n >= 0, InvalidArgument, "topk_count: negative length n = ", n);
  CONCORD_ENFORCE(density > 0 && density <= 1, InvalidArgument, "topk_count: density must be in (0, 1], got ", density);
  if (n == 0) return 0;
  const auto k = static_cast<int64_t>(std::floor(static_cast<double>(n) * density));
  return std::clamp<int64_t>(k, 1, n);
}

float kth_largest_magnitude(const float* x, int64_t n, int64_t k) {
  check_buffer(x, n, "kth_largest_magnitude");
  CONCORD_ENFORCE(k >= 1 && k <= n, InvalidArgument, "kth_largest_magnitude: k = ", k, " outside [1, n = ", n, "]");
  Scratch& buffers = scratch();
  if (sampled_candidates(x, n, k, buffers.sample, buffers.candidates, buffers.keys)) {
    return key_value(kth_largest_key(buffers.keys.data(), static_cast<int64_t>(buffers.keys.size()), k, buffers.work));
  }
  std::vector<uint32_t> keys, work;
  all_keys(x, n, keys);
  return key_value(kth_largest_key(keys.data(), n, k, work));
}

void topk_exact(const float* x, int64_t n, int64_t k, std::vector<int64_t>& indices) {
  check_buffer(x, n, "topk_exact");
  CONCORD_ENFORCE(k >= 0, InvalidArgument, "topk_exact: negative k = ", k);
  indices.clear();
  if (k == 0 || n == 0) return;
  if (k >= n) {
    indices.resize(static_cast<size_t>(n));
    std::iota(indices.begin(), indices.end(), int64_t{0});
    return;
  }
  Scratch& buffers = scratch();
  if (sampled_candidates(x, n, k, buffers.sample, buffers.candidates, buffers.keys)) {
    const int64_t* c = buffers.candidates.data();
    select_among(
        buffers.keys, buffers.work, [c](int64_t i) { return c[i]; }, k, indices);
  } else {
    std::vector<uint32_t> keys, work;
    all_keys(x, n, keys);
    select_among(
        keys, work, [](int64_t i) { return i; }, k, indices);
  }
}

void select_above(const float* x, int64_t n, float threshold, bool strict, std::vector<int64_t>& indices) {
  check_buffer(x, n, "select_above");
  indices.clear();
  detail::append_abs_above(x, n, threshold, strict, indices);
}

float ThresholdFeedback::adjust(float threshold, int64_t selected, int64_t k) const {
  const auto count = static_cast<double>(selected);
  if (count < lo * static_cast<double>(k)) return static_cast<float>(threshold / factor);
  if (count > hi * static_cast<double>(k)) return static_cast<float>(threshold * factor);
  return threshold;
}

float gaussian_threshold(const float* x, int64_t n, double density, int corrections) {
  check_buffer(x, n, "gaussian_threshold");
  CONCORD_ENFORCE(n > 0, InvalidArgument, "gaussian_threshold: empty buffer");
  CONCORD_ENFORCE(corrections >= 0, InvalidArgument, "gaussian_threshold: negative corrections ", corrections);
  const int64_t k = topk_count(n, density);  // validates density
  const detail::Moments m = detail::moments(x, n);
  const double z = density >= 1 ? 0.0 : detail::normal_quantile(1 - density / 2);
  auto threshold = static_cast<float>(m.mean + z * m.stddev);
  for (int step = 0; step < corrections; ++step) {
    const int64_t passing = detail::count_abs_above(x, n, threshold, false);
    if (4 * passing < 3 * k) {
      threshold = static_cast<float>(threshold / 1.02);
    } else if (4 * passing > 5 * k) {
      threshold = static_cast<float>(threshold * 1.02);
    } else {
      break;
    }
  }
  return threshold;
}

}  // namespace concord::sparse
