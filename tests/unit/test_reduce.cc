// Reduction and scaling kernels (src/common/reduce.h) for every dtype and op, against a
// float64 / modular-integer reference computed here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "common/reduce.h"
#include "concord/errors.h"
#include "test_support/dtype_util.h"

namespace concord {
namespace {

using testing_util::all_dtypes;
using testing_util::all_ops;
using testing_util::bits_mask;
using testing_util::is_integer;
using testing_util::load;
using testing_util::load_bits;
using testing_util::round_to_bfloat16;
using testing_util::round_to_float16;
using testing_util::store;

// Rounds an exact float64 result to the dtype, independently of the code under test.
double round_to(DataType dtype, double x) {
  switch (dtype) {
    case DataType::kFloat32: return static_cast<float>(x);
    case DataType::kFloat16: return round_to_float16(x);
    case DataType::kBFloat16: return round_to_bfloat16(x);
    default: return x;
  }
}

// Deterministic inputs: integers cover the whole range of the type (sums and products wrap),
// floats are in [-4, 4] with a fractional part so that roundings happen.
double input_value(DataType dtype, int which, size_t i) {
  const uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ull ^ (which + 1) * 0xC2B2AE3D27D4EB4Full;
  const uint64_t mixed = (h ^ (h >> 29)) * 0xBF58476D1CE4E5B9ull;
  if (is_integer(dtype)) {
    switch (dtype) {
      case DataType::kInt8: return static_cast<int8_t>(mixed >> 40);
      case DataType::kInt16: return static_cast<int16_t>(mixed >> 40);
      case DataType::kUInt8: return static_cast<uint8_t>(mixed >> 40);
      case DataType::kInt32: return static_cast<int32_t>(mixed >> 20);
      default: return static_cast<double>(static_cast<int32_t>(mixed >> 11)) * 4099.0;  // int64
    }
  }
  return (static_cast<double>(mixed >> 11) / static_cast<double>(uint64_t{1} << 53)) * 8.0 - 4.0;
}

struct ReduceCase {
  DataType dtype;
  ReduceOp op;
  size_t count;
};

const size_t kLengths[] = {0, 1, 7, 1023};  // empty, single, odd, several 256-element blocks

void check_reduce(DataType dtype, ReduceOp op, size_t count) {
  const size_t element = dtype_size(dtype);
  std::vector<uint8_t> dst(count * element + 16, 0xAB), src(count * element + 16, 0xCD);
  for (size_t i = 0; i < count; ++i) {
    store(dst.data(), i, dtype, input_value(dtype, 0, i));
    store(src.data(), i, dtype, input_value(dtype, 1, i));
  }
  const std::vector<uint8_t> original = dst;
  const std::vector<uint8_t> src_before = src;
  reduce_inplace(dst.data(), src.data(), count, dtype, op);

  EXPECT_EQ(src, src_before) << dtype_name(dtype) << " count " << count << ": the source must not be modified";
  for (size_t i = count * element; i < dst.size(); ++i)
    ASSERT_EQ(dst[i], 0xAB) << dtype_name(dtype) << " " << reduce_op_name(op) << " count " << count
                            << ": wrote past the end, byte " << i;
  int failures = 0;
  for (size_t i = 0; i < count && failures < 10; ++i) {
    SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << " " << reduce_op_name(op) << " count " << count
                                      << " element " << i);
    if (is_integer(dtype)) {
      const uint64_t a = load_bits(original.data(), i, dtype);
      const uint64_t b = load_bits(src.data(), i, dtype);
      const double da = load(original.data(), i, dtype), db = load(src.data(), i, dtype);
      uint64_t expected = 0;
      // Sign-extend through the double value so products of negatives are right mod 2^bits.
      const uint64_t sa = static_cast<uint64_t>(static_cast<int64_t>(da));
      const uint64_t sb = static_cast<uint64_t>(static_cast<int64_t>(db));
      switch (op) {
        case ReduceOp::kSum:
        case ReduceOp::kAverage: expected = a + b; break;
        case ReduceOp::kProduct: expected = sa * sb; break;
        case ReduceOp::kMin: expected = da <= db ? a : b; break;
        case ReduceOp::kMax: expected = da >= db ? a : b; break;
        case ReduceOp::kAdasum: break;  // not element-wise: never in the op lists
      }
      const uint64_t got = load_bits(dst.data(), i, dtype);
      EXPECT_EQ(got, expected & bits_mask(dtype)) << "a=" << da << " b=" << db;
      failures += got != (expected & bits_mask(dtype));
    } else {
      const double a = load(original.data(), i, dtype), b = load(src.data(), i, dtype);
      double exact = 0;  // exact in float64 for two inputs of at most 24 significant bits
      switch (op) {
        case ReduceOp::kSum:
        case ReduceOp::kAverage: exact = a + b; break;
        case ReduceOp::kProduct: exact = a * b; break;
        case ReduceOp::kMin: exact = std::min(a, b); break;
        case ReduceOp::kMax: exact = std::max(a, b); break;
        case ReduceOp::kAdasum: break;  // not element-wise: never in the op lists
      }
      // float64 sums are rounded once by the hardware, as the reference; the 16-bit types
      // are computed in float32 and rounded again, which is still correctly rounded.
      const double expected = round_to(dtype, exact);
      const double got = load(dst.data(), i, dtype);
      EXPECT_EQ(got, expected) << "a=" << a << " b=" << b;
      failures += got != expected;
    }
  }
}

class ReduceInplace : public ::testing::TestWithParam<std::tuple<DataType, ReduceOp>> {};

TEST_P(ReduceInplace, MatchesReferenceForOddLengths) {
  const auto [dtype, op] = GetParam();
  for (size_t count : kLengths) check_reduce(dtype, op, count);
}

INSTANTIATE_TEST_SUITE_P(AllDtypesAndOps, ReduceInplace,
                         ::testing::Combine(::testing::ValuesIn(all_dtypes()), ::testing::ValuesIn(all_ops())),
                         [](const auto& info) {
                           return testing_util::cat(dtype_name(std::get<0>(info.param)), "_",
                                                    reduce_op_name(std::get<1>(info.param)));
                         });

// reduce_into's three forms give the same bits as reduce_inplace(a, src): out of place
// (dst apart), dst == a, and dst == src (the ring and the exchange schedules receive the
// right operand where the result goes). Which operand is left matters for NaNs in min/max,
// so NaNs are mixed into both float inputs.
TEST_P(ReduceInplace, IntoFormsAreBitIdenticalToInPlace) {
  const auto [dtype, op] = GetParam();
  const size_t element = dtype_size(dtype);
  for (size_t count : kLengths) {
    std::vector<uint8_t> a(count * element), b(count * element);
    for (size_t i = 0; i < count; ++i) {
      const bool nan = !is_integer(dtype) && i % 5 == 3;
      store(a.data(), i, dtype, nan && i % 2 ? std::nan("") : input_value(dtype, 0, i));
      store(b.data(), i, dtype, nan && i % 2 == 0 ? -std::nan("") : input_value(dtype, 1, i));
    }
    for (bool portable : {false, true}) {  // portable: the compiler-vectorised loops (no F16C)
      const auto inplace_kernel = portable ? reduce_inplace_portable : reduce_inplace;
      const auto into_kernel = portable ? reduce_into_portable : reduce_into;
      std::vector<uint8_t> in_place = a, apart(a.size(), 0xEE), right = b;
      inplace_kernel(in_place.data(), b.data(), count, dtype, op);
      into_kernel(apart.data(), a.data(), b.data(), count, dtype, op);
      into_kernel(right.data(), a.data(), right.data(), count, dtype, op);
      const std::string what =
          testing_util::cat(dtype_name(dtype), " ", reduce_op_name(op), " count ", count, portable ? " portable" : "");
      EXPECT_EQ(testing_util::first_difference(apart, in_place, element), -1) << what << ": dst apart";
      EXPECT_EQ(testing_util::first_difference(right, in_place, element), -1) << what << ": dst == src";
    }
  }
}

TEST(ReduceInplaceSemantics, AverageReducesAsSum) {
  for (DataType dtype : all_dtypes()) {
    const size_t n = 300, element = dtype_size(dtype);
    std::vector<uint8_t> sum(n * element), average(n * element), src(n * element);
    for (size_t i = 0; i < n; ++i) {
      store(sum.data(), i, dtype, input_value(dtype, 2, i));
      store(src.data(), i, dtype, input_value(dtype, 3, i));
    }
    average = sum;
    reduce_inplace(sum.data(), src.data(), n, dtype, ReduceOp::kSum);
    reduce_inplace(average.data(), src.data(), n, dtype, ReduceOp::kAverage);
    EXPECT_EQ(sum, average) << dtype_name(dtype);
  }
}

template <typename T>
T reduce_one(T a, T b, DataType dtype, ReduceOp op) {
  reduce_inplace(&a, &b, 1, dtype, op);
  return a;
}

TEST(ReduceInplaceSemantics, IntegerWrapAround) {
  EXPECT_EQ(reduce_one<int8_t>(127, 1, DataType::kInt8, ReduceOp::kSum), -128);
  EXPECT_EQ(reduce_one<int8_t>(-128, -1, DataType::kInt8, ReduceOp::kSum), 127);
  EXPECT_EQ(reduce_one<int8_t>(16, 16, DataType::kInt8, ReduceOp::kProduct), 0);
  EXPECT_EQ(reduce_one<int8_t>(-128, -1, DataType::kInt8, ReduceOp::kProduct), -128);
  EXPECT_EQ(reduce_one<uint8_t>(255, 1, DataType::kUInt8, ReduceOp::kSum), 0);
  EXPECT_EQ(reduce_one<uint8_t>(16, 17, DataType::kUInt8, ReduceOp::kProduct), 16);
  EXPECT_EQ(reduce_one<int32_t>(std::numeric_limits<int32_t>::max(), 1, DataType::kInt32, ReduceOp::kSum),
            std::numeric_limits<int32_t>::min());
  EXPECT_EQ(reduce_one<int32_t>(65536, 65536, DataType::kInt32, ReduceOp::kProduct), 0);
  EXPECT_EQ(reduce_one<int64_t>(std::numeric_limits<int64_t>::max(), 1, DataType::kInt64, ReduceOp::kSum),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(reduce_one<int64_t>(int64_t{1} << 32, int64_t{1} << 32, DataType::kInt64, ReduceOp::kProduct), 0);
  EXPECT_EQ(reduce_one<int8_t>(-5, 3, DataType::kInt8, ReduceOp::kMin), -5);
  EXPECT_EQ(reduce_one<uint8_t>(200, 3, DataType::kUInt8, ReduceOp::kMax), 200) << "uint8 is unsigned";
}

TEST(ReduceInplaceSemantics, FloatSpecialValues) {
  EXPECT_EQ(reduce_one<float>(INFINITY, 1.0f, DataType::kFloat32, ReduceOp::kSum), INFINITY);
  EXPECT_EQ(reduce_one<double>(-INFINITY, 5.0, DataType::kFloat64, ReduceOp::kMin), -INFINITY);
  // float16: 65504 + 16 = 65520 rounds (ties to even) to infinity; 65504 + 15 stays finite.
  EXPECT_EQ(
      reduce_one<uint16_t>(float_to_float16(65504.0f), float_to_float16(16.0f), DataType::kFloat16, ReduceOp::kSum),
      0x7c00);
  EXPECT_EQ(
      reduce_one<uint16_t>(float_to_float16(65504.0f), float_to_float16(15.0f), DataType::kFloat16, ReduceOp::kSum),
      0x7bff);
  // 2048 + 1 is a float16 tie: rounds to even 2048; 2048 + 3 ties up to 2052.
  EXPECT_EQ(float16_to_float(reduce_one<uint16_t>(float_to_float16(2048.0f), float_to_float16(1.0f), DataType::kFloat16,
                                                  ReduceOp::kSum)),
            2048.0f);
  EXPECT_EQ(float16_to_float(reduce_one<uint16_t>(float_to_float16(2048.0f), float_to_float16(3.0f), DataType::kFloat16,
                                                  ReduceOp::kSum)),
            2052.0f);
  // bfloat16 products underflow to subnormals, then zero.
  const uint16_t tiny = float_to_bfloat16(std::ldexp(1.0f, -100));
  EXPECT_EQ(bfloat16_to_float(reduce_one<uint16_t>(tiny, float_to_bfloat16(std::ldexp(1.0f, -30)), DataType::kBFloat16,
                                                   ReduceOp::kProduct)),
            std::ldexp(1.0f, -130));
  EXPECT_EQ(reduce_one<uint16_t>(tiny, tiny, DataType::kBFloat16, ReduceOp::kProduct), 0x0000);
}

// The vectorised 16-bit float kernels (branch-free conversions; F16C where the CPU has it,
// so both reduce_inplace and reduce_inplace_portable) against the scalar definition
// narrow(op(widen(a), widen(b))) of half.h, bit for bit, for every one of the 65536 dst
// patterns (NaNs, infinities, subnormals included) paired with two different src patterns
// each, on a whole array so the vector loops and their tails run. A NaN result need only
// be a NaN: which payload NaN op NaN keeps is the CPU's and the compiler's operand order.
TEST(ReduceInplaceSemantics, HalfKernelsMatchScalarDefinitionForEveryBitPattern) {
  struct Half {
    DataType dtype;
    float (*widen)(uint16_t);
    uint16_t (*narrow)(float);
  };
  struct Kernel {
    const char* name;
    void (*run)(void*, const void*, size_t, DataType, ReduceOp);
  };
  const Half halves[] = {{DataType::kFloat16, float16_to_float, float_to_float16},
                         {DataType::kBFloat16, bfloat16_to_float, float_to_bfloat16}};
  const Kernel kernels[] = {{"reduce_inplace", reduce_inplace}, {"reduce_inplace_portable", reduce_inplace_portable}};
  for (const Kernel& kernel : kernels) {
    for (const Half& half : halves) {
      for (ReduceOp op : all_ops()) {
        for (uint32_t multiplier : {40503u, 7u}) {
          std::vector<uint16_t> dst(65536 + 5), src(dst.size());
          for (size_t i = 0; i < dst.size(); ++i) {
            dst[i] = static_cast<uint16_t>(i);
            src[i] = static_cast<uint16_t>(i * multiplier + 12345);
          }
          const std::vector<uint16_t> original = dst;
          kernel.run(dst.data() + 1, src.data() + 1, dst.size() - 1, half.dtype, op);  // odd start
          EXPECT_EQ(dst[0], original[0]) << kernel.name << ": element before the range was written";
          int failures = 0;
          for (size_t i = 1; i < dst.size() && failures < 10; ++i) {
            const float a = half.widen(original[i]), b = half.widen(src[i]);
            float combined = a + b;
            if (op == ReduceOp::kProduct) combined = a * b;
            if (op == ReduceOp::kMin) combined = b < a ? b : a;
            if (op == ReduceOp::kMax) combined = b > a ? b : a;
            const uint16_t expected = half.narrow(combined);
            const bool ok = std::isnan(combined) ? std::isnan(half.widen(dst[i])) : dst[i] == expected;
            EXPECT_TRUE(ok) << kernel.name << " " << dtype_name(half.dtype) << " " << reduce_op_name(op) << " element "
                            << i << std::hex << ": 0x" << original[i] << " with 0x" << src[i] << " gave 0x" << dst[i]
                            << ", expected 0x" << expected;
            failures += !ok;
          }
        }
      }
    }
  }
}

TEST(ReduceInplaceSemantics, UnknownCodesAreInvalidArgument) {
  float a = 1, b = 2;
  EXPECT_THROW(reduce_inplace(&a, &b, 1, static_cast<DataType>(10), ReduceOp::kSum), InvalidArgument);
  for (DataType dtype : all_dtypes()) {
    std::vector<uint8_t> x(8, 0), y(8, 0);
    EXPECT_THROW(reduce_inplace(x.data(), y.data(), 1, dtype, static_cast<ReduceOp>(5)), InvalidArgument)
        << dtype_name(dtype);
  }
  EXPECT_THROW(scale_buffer(&a, &b, 1, static_cast<DataType>(10), 2.0), InvalidArgument);
}

// ---------------------------------------------------------------------------------------
// scale_buffer: float64 and integers scale in float64 (integers truncate toward zero),
// float32 and the 16-bit types in float32.

void check_scale(DataType dtype, size_t count, double factor) {
  SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << " count " << count << " factor " << factor);
  const size_t element = dtype_size(dtype);
  std::vector<uint8_t> src(count * element);
  for (size_t i = 0; i < count; ++i) {
    double v = input_value(dtype, 4, i);
    if (is_integer(dtype)) v = std::trunc(v / 4);  // keep 3 * v inside the type
    store(src.data(), i, dtype, v);
  }
  std::vector<uint8_t> out(count * element + 8, 0xEE), in_place = src;
  scale_buffer(out.data(), src.data(), count, dtype, factor);
  scale_buffer(in_place.data(), in_place.data(), count, dtype, factor);
  for (size_t i = count * element; i < out.size(); ++i) ASSERT_EQ(out[i], 0xEE) << "wrote past the end";
  EXPECT_TRUE(std::equal(in_place.begin(), in_place.end(), out.begin())) << "in place differs from out of place";
  int failures = 0;
  for (size_t i = 0; i < count && failures < 10; ++i) {
    const double x = load(src.data(), i, dtype);
    double expected;
    if (is_integer(dtype)) {
      expected = std::trunc(x * factor);
    } else if (dtype == DataType::kFloat64) {
      expected = x * factor;
    } else {  // the product of two float32 values is exact in float64, then rounded to float32
      const double in_float = static_cast<float>(x * static_cast<double>(static_cast<float>(factor)));
      expected = round_to(dtype, in_float);
    }
    const double got = load(out.data(), i, dtype);
    EXPECT_EQ(got, expected) << "element " << i << " x=" << x;
    failures += got != expected;
  }
}

class ScaleBuffer : public ::testing::TestWithParam<DataType> {};

TEST_P(ScaleBuffer, MatchesReferenceOutOfPlaceAndInPlace) {
  const DataType dtype = GetParam();
  for (size_t count : kLengths) {
    for (double factor : {0.5, 1.0 / 3.0, -2.0, 3.0, 0.0}) {
      if (dtype == DataType::kUInt8 && factor < 0) continue;  // negative results do not fit
      check_scale(dtype, count, factor);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, ScaleBuffer, ::testing::ValuesIn(all_dtypes()),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(ScaleBufferSemantics, IntegersTruncateTowardZero) {
  int32_t v[] = {7, -7, 1, -1, 10, -10};
  scale_buffer(v, v, 6, DataType::kInt32, 0.5);
  EXPECT_EQ(std::vector<int32_t>(v, v + 6), (std::vector<int32_t>{3, -3, 0, 0, 5, -5}));
  int64_t w[] = {10, -10};
  scale_buffer(w, w, 2, DataType::kInt64, 1.0 / 3.0);
  EXPECT_EQ(w[0], 3);
  EXPECT_EQ(w[1], -3);
  uint8_t u[] = {200, 255, 1};
  scale_buffer(u, u, 3, DataType::kUInt8, 0.5);
  EXPECT_EQ(std::vector<uint8_t>(u, u + 3), (std::vector<uint8_t>{100, 127, 0}));
}

TEST(ScaleBufferSemantics, HalfTypesScaleInFloat32AndRoundOnce) {
  // float32(1/3) * 3 rounds to 1 in float32 (and would in float16).
  uint16_t h = float_to_float16(3.0f);
  scale_buffer(&h, &h, 1, DataType::kFloat16, 1.0 / 3.0);
  EXPECT_EQ(float16_to_float(h), 1.0f);
  uint16_t b = float_to_bfloat16(1.0f);
  scale_buffer(&b, &b, 1, DataType::kBFloat16, 1e-3);
  EXPECT_EQ(b, float_to_bfloat16(1e-3f));
}

}  // namespace
}  // namespace concord
