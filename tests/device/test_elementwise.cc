// The per-element functions shared by the CPU and CUDA kernels (src/common/reduce_ops.h),
// compiled for the host here in every run: on special values (NaN with payloads, signed
// zeros, infinities, subnormals, extremes) they must give exactly the CPU kernels' bytes,
// including the F16C float16 kernel (an independent, hardware implementation), and the
// rules the GPU kernels must not take from CUDA (__hmin/__hmax, 0x7fff NaN).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "common/reduce.h"
#include "common/reduce_ops.h"
#include "test_support/dtype_util.h"

namespace concord {
namespace {

using namespace reduce_ops;
using testing_util::all_dtypes;
using testing_util::all_ops;
using testing_util::cat;

// Special and ordinary values of `dtype` as raw bytes.
std::vector<uint8_t> specials(DataType dtype) {
  std::vector<uint64_t> bits;
  switch (dtype) {
    case DataType::kFloat16:
      bits = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0xbc00, 0x3555, 0x7bff,
              0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7d01, 0xfe3f, 0x7c01, 0x4170, 0x1234};
      break;
    case DataType::kBFloat16:
      bits = {0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x0080, 0x3f80, 0xbf80, 0x3eab, 0x7f7f,
              0xff7f, 0x7f80, 0xff80, 0x7fc0, 0x7fa1, 0xffc3, 0x7f81, 0x4170, 0x1234};
      break;
    case DataType::kFloat32:
      bits = {0x00000000, 0x80000000, 0x00000001, 0x807fffff, 0x3f800000, 0xbf800000, 0x3eaaaaab, 0x7f7fffff,
              0xff7fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0x7fc12345, 0xffa00001, 0x40490fdb};
      break;
    case DataType::kFloat64:
      bits = {0,
              0x8000000000000000ull,
              1,
              0x3ff0000000000000ull,
              0xbff0000000000000ull,
              0x7fefffffffffffffull,
              0x7ff0000000000000ull,
              0xfff0000000000000ull,
              0x7ff8000000000000ull,
              0x7ff8000000abcdefull,
              0x400921fb54442d18ull};
      break;
    default:  // integers: extremes and small values (wrap-around)
      bits = {0,
              1,
              2,
              3,
              0x7f,
              0x80,
              0xff,
              0x7fffffff,
              0x80000000,
              0xffffffff,
              0x7fffffffffffffffull,
              0x8000000000000000ull,
              0xffffffffffffffffull,
              12345,
              0xfffffffffffffff0ull};
  }
  const size_t size = dtype_size(dtype);
  std::vector<uint8_t> out(bits.size() * size);
  for (size_t i = 0; i < bits.size(); ++i) std::memcpy(out.data() + i * size, &bits[i], size);  // little-endian
  return out;
}

template <typename T, typename Combine>
void combine_plain(void* dst, const void* src, size_t n, Combine combine) {
  for (size_t i = 0; i < n; ++i) {
    T a, b;
    std::memcpy(&a, static_cast<uint8_t*>(dst) + i * sizeof(T), sizeof(T));
    std::memcpy(&b, static_cast<const uint8_t*>(src) + i * sizeof(T), sizeof(T));
    const T r = combine(a, b);
    std::memcpy(static_cast<uint8_t*>(dst) + i * sizeof(T), &r, sizeof(T));
  }
}

template <typename Half, typename Combine>
void combine_16(void* dst, const void* src, size_t n, Combine combine) {
  auto* d = static_cast<uint16_t*>(dst);
  const auto* s = static_cast<const uint16_t*>(src);
  for (size_t i = 0; i < n; ++i) d[i] = combine_half<Half>(d[i], s[i], combine);
}

// The per-element functions applied one element at a time (as a GPU thread does).
template <typename T>
void elementwise(void* dst, const void* src, size_t n, DataType dtype, ReduceOp op) {
  const auto go = [&](auto combine) {
    if (dtype == DataType::kFloat16) return combine_16<Float16>(dst, src, n, combine);
    if (dtype == DataType::kBFloat16) return combine_16<BFloat16>(dst, src, n, combine);
    combine_plain<T>(dst, src, n, combine);
  };
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: return go(Sum<T>{});
    case ReduceOp::kProduct: return go(Product<T>{});
    case ReduceOp::kMin: return go(Min<T>{});
    case ReduceOp::kMax: return go(Max<T>{});
    case ReduceOp::kAdasum: return;  // not element-wise (AllreduceAdasum); not in all_ops()
  }
}

void elementwise(void* dst, const void* src, size_t n, DataType dtype, ReduceOp op) {
  switch (dtype) {
    case DataType::kFloat32:
    case DataType::kFloat16:
    case DataType::kBFloat16: return elementwise<float>(dst, src, n, dtype, op);
    case DataType::kFloat64: return elementwise<double>(dst, src, n, dtype, op);
    case DataType::kInt32: return elementwise<int32_t>(dst, src, n, dtype, op);
    case DataType::kInt64: return elementwise<int64_t>(dst, src, n, dtype, op);
    case DataType::kInt16: return elementwise<int16_t>(dst, src, n, dtype, op);
    case DataType::kInt8: return elementwise<int8_t>(dst, src, n, dtype, op);
    case DataType::kUInt8: return elementwise<uint8_t>(dst, src, n, dtype, op);
    case DataType::kBool: break;  // not reducible
  }
}

// True when elements `e` of a and b are both NaN: which payload NaN-with-NaN keeps differs
// between CPU kernel variants (common/reduce.h), so those pairs are not compared.
bool both_nan(DataType dtype, const uint8_t* a, const uint8_t* b) {
  const auto nan = [&](const uint8_t* p) {
    switch (dtype) {
      case DataType::kFloat16: return testing_util::load(p, 0, dtype) != testing_util::load(p, 0, dtype);
      case DataType::kBFloat16:
      case DataType::kFloat32:
      case DataType::kFloat64: return std::isnan(testing_util::load(p, 0, dtype));
      default: return false;
    }
  };
  return nan(a) && nan(b);
}

class Elementwise : public testing::TestWithParam<std::tuple<DataType, ReduceOp>> {};

// Every pair of special values: the element functions equal the portable CPU kernel and
// the dispatched one (F16C for float16 where available) bit for bit, except which NaN a
// NaN-with-NaN keeps (not fixed across CPU kernel variants either: common/reduce.h).
TEST_P(Elementwise, MatchesCpuKernelsOnSpecialValues) {
  const auto [dtype, op] = GetParam();
  const size_t size = dtype_size(dtype);
  const auto values = specials(dtype);
  const size_t k = values.size() / size;
  std::vector<uint8_t> a(k * k * size), b(k * k * size);
  for (size_t i = 0; i < k; ++i)
    for (size_t j = 0; j < k; ++j) {
      std::memcpy(a.data() + (i * k + j) * size, values.data() + i * size, size);
      std::memcpy(b.data() + (i * k + j) * size, values.data() + j * size, size);
    }
  auto ours = a, portable = a, dispatched = a;
  elementwise(ours.data(), b.data(), k * k, dtype, op);
  reduce_inplace_portable(portable.data(), b.data(), k * k, dtype, op);
  reduce_inplace(dispatched.data(), b.data(), k * k, dtype, op);
  for (size_t e = 0; e < k * k; ++e) {
    const std::string what = cat(dtype_name(dtype), " ", reduce_op_name(op), " pair ", e / k, ",", e % k);
    if (both_nan(dtype, a.data() + e * size, b.data() + e * size)) continue;
    ASSERT_EQ(0, std::memcmp(ours.data() + e * size, portable.data() + e * size, size)) << what;
    ASSERT_EQ(0, std::memcmp(ours.data() + e * size, dispatched.data() + e * size, size)) << what << " (dispatched)";
  }
}

INSTANTIATE_TEST_SUITE_P(AllDtypesOps, Elementwise,
                         testing::Combine(testing::ValuesIn(all_dtypes()), testing::ValuesIn(all_ops())),
                         [](const auto& info) {
                           return cat(dtype_name(std::get<0>(info.param)), "_",
                                      reduce_op_name(std::get<1>(info.param)));
                         });

// scale_element / scale_half_element against scale_buffer for every dtype and a few factors.
TEST(Elementwise, ScaleMatchesScaleBuffer) {
  for (DataType dtype : all_dtypes()) {
    const auto values = specials(dtype);
    const size_t size = dtype_size(dtype);
    const size_t n = values.size() / size;
    for (double factor : {0.125, 1.0 / 3.0, -2.5, 1e-30}) {
      std::vector<uint8_t> expected(values.size()), ours(values.size());
      scale_buffer(expected.data(), values.data(), n, dtype, factor);
      for (size_t i = 0; i < n; ++i) {
        const uint8_t* x = values.data() + i * size;
        uint8_t* out = ours.data() + i * size;
        const auto put = [&](auto v) { std::memcpy(out, &v, sizeof v); };
        const auto get = [&]<typename T>(T) {
          T v;
          std::memcpy(&v, x, sizeof v);
          return v;
        };
        switch (dtype) {
          case DataType::kFloat32: put(scale_element<float, float>(get(float{}), static_cast<float>(factor))); break;
          case DataType::kFloat64: put(scale_element<double, double>(get(double{}), factor)); break;
          case DataType::kInt32: put(scale_element<int32_t, double>(get(int32_t{}), factor)); break;
          case DataType::kInt64: put(scale_element<int64_t, double>(get(int64_t{}), factor)); break;
          case DataType::kInt16: put(scale_element<int16_t, double>(get(int16_t{}), factor)); break;
          case DataType::kInt8: put(scale_element<int8_t, double>(get(int8_t{}), factor)); break;
          case DataType::kUInt8: put(scale_element<uint8_t, double>(get(uint8_t{}), factor)); break;
          case DataType::kFloat16: put(scale_half_element<Float16>(get(uint16_t{}), static_cast<float>(factor))); break;
          case DataType::kBFloat16:
            put(scale_half_element<BFloat16>(get(uint16_t{}), static_cast<float>(factor)));
            break;
          case DataType::kBool: break;  // not reducible
        }
      }
      // Integer products beyond the dtype's range are not defined (common/reduce.h): skip them.
      for (size_t i = 0; i < n; ++i) {
        if (testing_util::is_integer(dtype) && std::abs(testing_util::load(values.data(), i, dtype) * factor) >=
                                                   std::ldexp(1.0, static_cast<int>(size * 8 - 1)))
          continue;
        EXPECT_EQ(0, std::memcmp(ours.data() + i * size, expected.data() + i * size, size))
            << dtype_name(dtype) << " factor " << factor << " element " << i;
      }
    }
  }
}

// The rules the CUDA kernels must keep from the CPU, not from CUDA's intrinsics.
TEST(Elementwise, CpuRulesForNanSignedZeroAndPayload) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(Min<float>{}(nan, 1.0f)));      // a NaN in dst stays (__hmin would give 1)
  EXPECT_EQ(Min<float>{}(1.0f, nan), 1.0f);              // a NaN in src never replaces dst
  EXPECT_TRUE(std::signbit(Min<float>{}(-0.0f, 0.0f)));  // equal: dst kept
  EXPECT_FALSE(std::signbit(Max<float>{}(0.0f, -0.0f)));
  // float32 NaN 0x7fc12345 -> float16 keeps the top payload bits, quieted (CUDA: 0x7fff).
  EXPECT_EQ(Float16::narrow(bits_float(0x7fc12345u)), 0x7e00u | ((0x7fc12345u >> 13) & 0x3ffu));
  EXPECT_EQ(BFloat16::narrow(bits_float(0x7f812345u)), 0x7fc1u);
  EXPECT_EQ(combine_half<Float16>(0x7d01, 0x3c00, Sum<float>{}), 0x7f01);  // signalling NaN quieted, payload kept
}

}  // namespace
}  // namespace concord
