// Shared helpers of the multi-rank suite (tests/mpi): element access for every dtype,
// deterministic inputs as a function of (rank, index), the float64-or-better reference,
// element-wise comparison that names rank, collective, size, dtype and index, and a
// wait that turns a hang into a failure of the whole job.
//
// Every rank runs the same tests in the same order and submits the same collectives, so
// nothing here may skip a collective on one rank only: checks use EXPECT_*, never ASSERT_*
// before the last collective of a test.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/half.h"
#include "concord/concord.h"
#include "test_support/dtype_lists.h"
#include "test_support/dtype_util.h"
#include "transport/transport_world.h"

namespace concord::mpitest {

/// long double holds every int64 and every double exactly (x86-64: 64-bit mantissa), so
/// int64 references stay exact; "float64 reference" in the test descriptions means this.
using Real = long double;

using testing_util::is_floating;
using testing_util::unit_roundoff;
using testlists::all_dtypes;
using testlists::all_ops;

/// The world rank from the transport itself (MPI_COMM_WORLD's under mpirun, the UCX
/// world's under a store launcher): valid before init() and after shutdown().
inline int world_rank() { return process_world().rank(); }

inline int world_size() { return process_world().size(); }

/// True when the suite runs over MPI (tests that call MPI themselves skip otherwise).
inline bool over_mpi() { return process_world().origin().transport == "mpi"; }

/// Raw bits of element i as hex, for messages about 16-bit floats and bit-exactness.
inline std::string element_bits(DataType dtype, const void* data, int64_t i) {
  const size_t n = dtype_size(dtype);
  const auto* bytes = static_cast<const uint8_t*>(data) + static_cast<size_t>(i) * n;
  std::ostringstream out;
  out << "0x" << std::hex;
  for (size_t b = n; b-- > 0;) out << (bytes[b] < 16 ? "0" : "") << static_cast<int>(bytes[b]);
  return out.str();
}

/// Number of elements of a shape (1 for a scalar).
inline int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

/// An owning dense tensor; view() hands it to Concord.
struct Tensor {
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  Tensor() = default;
  Tensor(DataType d, std::vector<int64_t> s) : dtype(d), shape(std::move(s)) {
    bytes.assign(static_cast<size_t>(count()) * dtype_size(dtype), 0);
  }
  int64_t count() const { return element_count(shape); }
  void* data() { return bytes.empty() ? nullptr : bytes.data(); }
  const void* data() const { return bytes.empty() ? nullptr : bytes.data(); }
  TensorView view() { return TensorView{data(), dtype, shape}; }
  Real at(int64_t i) const { return testing_util::load<Real>(bytes.data(), static_cast<size_t>(i), dtype); }
  template <typename T>
  void set(int64_t i, T v) {
    testing_util::store<T>(bytes.data(), static_cast<size_t>(i), dtype, v);
  }
};

/// Element count of the "large" size of a dtype: more than 1 MiB and odd.
inline int64_t large_count(DataType dtype) { return static_cast<int64_t>((size_t{1} << 20) / dtype_size(dtype)) + 3; }

/// The sizes every collective is tested with: 0, 1, 7, 1023 and > 1 MiB (odd count).
inline std::vector<int64_t> test_counts(DataType dtype) { return {0, 1, 7, 1023, large_count(dtype)}; }

/// A cheap, well-mixed hash of (rank, index, seed) (splitmix64 finaliser).
inline uint64_t mix(int rank, int64_t index, uint64_t seed) {
  uint64_t x = static_cast<uint64_t>(index) * 0x9E3779B97F4A7C15ull +
               static_cast<uint64_t>(rank + 1) * 0xBF58476D1CE4E5B9ull + seed * 0x94D049BB133111EBull;
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

/// Input for sum/average/min/max (and for allgather/broadcast payloads). Exactly
/// representable in `dtype`; the exponent depends only on the index, so sums over up to
/// 4 ranks are exact in every floating dtype and integer sums (also with prescale 0.5 and
/// postscale 3) stay in range. `wide` adds +-2^58 to int64 values (sums stay below 2^61)
/// to catch an int64 path that goes through double; only without scale factors.
/// T = double is exact for every dtype but int64 (use Real there; see fill()).
template <typename T = Real>
inline T additive_value(DataType dtype, int rank, int64_t index, uint64_t seed, bool wide = false) {
  static constexpr T kPowerOfTwo[7] = {0.125, 0.25, 0.5, 1, 2, 4, 8};  // 2^(index % 7 - 3)
  const uint64_t h = mix(rank, index, seed);
  const T binade = kPowerOfTwo[index % 7];
  switch (dtype) {
    case DataType::kFloat32:
    case DataType::kFloat64: return static_cast<T>(static_cast<int64_t>(h % 2001) - 1000) * binade;
    case DataType::kFloat16:
    case DataType::kBFloat16: return static_cast<T>(static_cast<int64_t>(h % 41) - 20) * binade;
    // 8-bit sums stay in range at any number of ranks up to 16 (times prescale 0.5 and
    // postscale 3 as at 4 ranks): ranks 0..3 within +-20 (0..40), the others -1..1 (0..1).
    case DataType::kInt8: return static_cast<T>(static_cast<int64_t>(rank < 4 ? h % 41 : h % 3) - (rank < 4 ? 20 : 1));
    case DataType::kUInt8: return static_cast<T>(rank < 4 ? h % 41 : h % 2);
    case DataType::kBool: return static_cast<T>(h % 2);
    case DataType::kInt16: return static_cast<T>(static_cast<int64_t>(h % 2001) - 1000);
    case DataType::kInt32: return static_cast<T>(static_cast<int64_t>(h % 2000001) - 1000000);
    case DataType::kInt64: {
      int64_t v = static_cast<int64_t>(h % 2000001) - 1000000;
      if (wide) v += (static_cast<int64_t>((h >> 40) % 3) - 1) * (int64_t{1} << 58);
      return static_cast<T>(v);
    }
  }
  return 0;
}

/// Input for product: small factors so a product over 4 ranks (times postscale 3) is
/// exact in every dtype and fits int8/uint8; in the 8-bit types ranks from 4 on contribute
/// only factors that keep the magnitude (1, -1, and 0), so any number of ranks fits.
template <typename T = Real>
inline T multiplicative_value(DataType dtype, int rank, int64_t index, uint64_t seed) {
  static constexpr T kFloat[] = {1, -1, 2, 0.5, -2, 1.5, 0, -0.5, 1, 1};
  static constexpr T kSigned[] = {1, -1, 2, -2, 3, 1, 0, -3, 1, 1};
  static constexpr T kUnsigned[] = {1, 2, 3, 1, 0, 2, 1, 3, 1, 1};
  static constexpr T kWide[] = {1, -1, 2, -2, 3, -3, 5, 7, 0, 1};
  static constexpr T kSignedTail[] = {1, -1, 1, -1, 0, 1, -1, 1, 1, -1};
  static constexpr T kUnsignedTail[] = {1, 1, 0, 1, 1, 1, 1, 0, 1, 1};
  const uint64_t h = mix(rank, index, seed) % 10;
  if (rank >= 4 && dtype == DataType::kInt8) return kSignedTail[h];
  if (rank >= 4 && dtype == DataType::kUInt8) return kUnsignedTail[h];
  switch (dtype) {
    case DataType::kInt8:
    case DataType::kInt16: return kSigned[h];
    case DataType::kUInt8: return kUnsigned[h];
    case DataType::kInt32:
    case DataType::kInt64: return kWide[h];
    default: return kFloat[h];
  }
}

/// Sets every element i of `tensor` to value(type_tag, i), computed in double, or in Real
/// for int64 (whose values near 2^58 double cannot hold). `value` is a generic lambda
/// taking a T{} tag and the index.
template <typename Value>
void fill(Tensor& tensor, Value&& value) {
  const int64_t n = tensor.count();
  if (tensor.dtype == DataType::kInt64) {
    for (int64_t i = 0; i < n; ++i) tensor.set(i, value(Real{}, i));
  } else {
    for (int64_t i = 0; i < n; ++i) tensor.set(i, value(double{}, i));
  }
}

/// Context of one checked tensor: who (rank), what (collective + algorithm + variant),
/// which tensor, dtype and size. Printed in front of every failure.
inline std::string describe(const std::string& collective, const std::string& name, DataType dtype, int64_t count) {
  std::ostringstream out;
  out << "[rank " << world_rank() << "/" << world_size() << "] " << collective << " of tensor '" << name << "', dtype "
      << dtype_name(dtype) << ", size " << count << " elements (" << count * static_cast<int64_t>(dtype_size(dtype))
      << " bytes)";
  return out.str();
}

/// Checks got[i] == expected[i] (within tolerance[i] when `tolerance` is non-empty) for
/// every element; reports the first few differing elements by index and then the count.
inline void expect_elements(const std::string& context, DataType dtype, const void* got,
                            const std::vector<Real>& expected, const std::vector<Real>& tolerance = {}) {
  constexpr int kMaxReported = 5;
  int64_t wrong = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(expected.size()); ++i) {
    const Real value = testing_util::load<Real>(got, static_cast<size_t>(i), dtype);
    const Real tol = tolerance.empty() ? 0 : tolerance[static_cast<size_t>(i)];
    const bool ok = tol == 0 ? value == expected[static_cast<size_t>(i)]
                             : std::fabs(value - expected[static_cast<size_t>(i)]) <= tol;
    if (ok) continue;
    if (++wrong <= kMaxReported) {
      ADD_FAILURE() << context << ": element " << i << " is " << static_cast<double>(value) << " ("
                    << element_bits(dtype, got, i) << "), expected "
                    << static_cast<double>(expected[static_cast<size_t>(i)]) << " (tolerance "
                    << static_cast<double>(tol) << ")";
    }
  }
  if (wrong > kMaxReported)
    ADD_FAILURE() << context << ": " << wrong << " of " << expected.size() << " elements differ in total";
}

/// A hang must fail, not block CI: a handle that is not done after this long aborts the
/// whole job with a message naming the rank and the operation.
constexpr std::chrono::seconds kWaitLimit{120};

/// Waits for `handle` (polling, so a timeout can be detected); returns its error or null.
inline std::exception_ptr wait_for(const Handle& handle, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + kWaitLimit;
  while (!handle.poll()) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "[rank %d] TIMEOUT: %s did not complete within %lld s; aborting\n", world_rank(),
                   what.c_str(), static_cast<long long>(kWaitLimit.count()));
      std::fflush(stderr);
      std::_Exit(3);  // the launcher (mpirun, concord-run) then ends the other ranks
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  try {
    handle.wait();
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

inline std::string what_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "(not a std::exception)";
  }
}

/// Waits and expects success; a failure names `what`. Returns true on success.
inline bool wait_ok(const Handle& handle, const std::string& what) {
  const std::exception_ptr error = wait_for(handle, what);
  if (!error) return true;
  ADD_FAILURE() << what << ": unexpected error from Handle::wait(): " << what_of(error);
  return false;
}

/// Waits and expects the handle to fail with ErrorType; returns its message ("" if not).
template <typename ErrorType>
std::string wait_error(const Handle& handle, const std::string& what) {
  const std::exception_ptr error = wait_for(handle, what);
  if (!error) {
    ADD_FAILURE() << what << ": Handle::wait() succeeded but an error was expected";
    return "";
  }
  try {
    std::rethrow_exception(error);
  } catch (const ErrorType& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": Handle::wait() threw the wrong error type: " << e.what();
  }
  return "";
}

/// One small allreduce whose result is checked: the proof that collectives still work
/// after an error. Every rank must call it with the same `name`.
inline void expect_allreduce_works(const std::string& name) {
  const int rank = concord::rank(), size = concord::size();
  std::vector<int64_t> values(5);
  for (int64_t i = 0; i < 5; ++i) values[i] = 100 * rank + i;
  std::vector<int64_t> out(5, -1);
  const Handle handle = allreduce_async(name, TensorView{values.data(), DataType::kInt64, {5}},
                                        TensorView{out.data(), DataType::kInt64, {5}});
  const std::string what = describe("allreduce(sum, ring) after an error", name, DataType::kInt64, 5);
  if (!wait_ok(handle, what)) return;
  for (int64_t i = 0; i < 5; ++i)
    EXPECT_EQ(out[i], 100 * (int64_t{size} * (size - 1) / 2) + size * i) << what << ": element " << i;
}

}  // namespace concord::mpitest
