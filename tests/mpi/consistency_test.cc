// Bit-identical results across ranks: an allreduce of floating data whose sum depends on
// the order of additions (random magnitudes over 21 binades) must leave exactly the same
// bytes on every rank, fused or not. Each rank allgathers its result bytes and compares
// every rank's block with rank 0's byte for byte; the result is also checked against the
// reference within rounding error, so identical garbage fails too.
#include "reference.h"

namespace concord::mpitest {
namespace {

// `value` as `dtype` holds it (through the library's float16/bfloat16 conversions).
Real round_to(DataType dtype, Real value) {
  uint8_t element[8];
  testing_util::store<Real>(element, 0, dtype, value);
  return testing_util::load<Real>(element, 0, dtype);
}

// Non-trivial input of `rank`, already rounded to `dtype`: for sums a random sign and
// mantissa times 2^[-10, 10]; for products a factor in [0.5, 2) with a random sign.
Real noisy_value(DataType dtype, ReduceOp op, int rank, int64_t index, uint64_t seed) {
  const uint64_t h = mix(rank, index, seed);
  const Real unit = static_cast<Real>(h >> 11) * std::ldexp(Real{1}, -53);  // [0, 1)
  const Real sign = (h & 1) ? -1 : 1;
  if (op == ReduceOp::kProduct) return round_to(dtype, sign * (0.5 + 1.5 * unit));
  static const std::vector<Real> binades = [] {
    std::vector<Real> powers;
    for (int e = -10; e <= 10; ++e) powers.push_back(std::ldexp(Real{1}, e));
    return powers;
  }();
  return round_to(dtype, sign * unit * binades[h % 21]);
}

struct Case {
  std::string name;
  std::string context;
  int64_t count = 0;
  uint64_t seed = 0;
  Tensor tensor;  // in-place allreduce
  Handle reduce;
  Handle gather;
};

class ConsistencyTest : public testing::TestWithParam<std::tuple<DataType, ReduceOp>> {};

TEST_P(ConsistencyTest, EveryRankHoldsRank0sBytes) {
  const auto [dtype, op] = GetParam();
  const int rank = concord::rank(), size = concord::size();
  const Real u = unit_roundoff(dtype);
  // float16 sums can land among its subnormals (< 2^-14), whose spacing is 2^-24.
  const Real absolute = dtype == DataType::kFloat16 ? size * std::ldexp(Real{1}, -24) : 0;
  // Three tensors submitted together (fused) and one alone (reduced in its own buffer).
  const std::vector<int64_t> fused_counts = {7, 1023, 65537};
  const int64_t single_count = 30011;
  std::vector<Case> cases;
  for (int64_t n : fused_counts) cases.emplace_back().count = n;
  cases.emplace_back().count = single_count;
  for (size_t k = 0; k < cases.size(); ++k) {
    Case& c = cases[k];
    c.seed = 1000 + k * 10 + static_cast<uint64_t>(op);
    c.tensor = Tensor(dtype, {c.count});
    for (int64_t i = 0; i < c.count; ++i) c.tensor.set(i, noisy_value(dtype, op, rank, i, c.seed));
    c.name =
        std::string("consistency.") + dtype_name(dtype) + "." + reduce_op_name(op) + ".n" + std::to_string(c.count);
    c.context = describe(std::string("allreduce(") + reduce_op_name(op) + ", ring, in place, " +
                             (k + 1 < cases.size() ? "fused" : "alone") + ") then allgather of the result bytes",
                         c.name, dtype, c.count);
  }
  const AllreduceOptions options{op, 1.0, 1.0};
  for (size_t k = 0; k + 1 < cases.size(); ++k)
    cases[k].reduce = allreduce_async(cases[k].name, cases[k].tensor.view(), cases[k].tensor.view(), options);
  std::vector<bool> ok(cases.size());
  for (size_t k = 0; k + 1 < cases.size(); ++k) ok[k] = wait_ok(cases[k].reduce, cases[k].context);
  Case& alone = cases.back();
  alone.reduce = allreduce_async(alone.name, alone.tensor.view(), alone.tensor.view(), options);
  ok.back() = wait_ok(alone.reduce, alone.context);

  // Gather every rank's result bytes (submitted on every rank whatever happened above, so
  // no rank is left waiting).
  for (auto& c : cases) {
    const TensorView bytes{c.tensor.data(), DataType::kUInt8, {static_cast<int64_t>(c.tensor.bytes.size())}};
    c.gather = allgather_async(c.name + ".gather", bytes);
  }
  for (size_t k = 0; k < cases.size(); ++k) {
    Case& c = cases[k];
    if (!wait_ok(c.gather, c.context) || !ok[k]) continue;
    const std::vector<uint8_t>& all = c.gather.output_bytes();
    const size_t block = c.tensor.bytes.size();
    EXPECT_EQ(all.size(), block * static_cast<size_t>(size)) << c.context << ": gathered byte count";
    if (all.size() != block * static_cast<size_t>(size)) continue;
    const size_t element = dtype_size(dtype);
    for (int r = 1; r < size; ++r) {
      const uint8_t* theirs = all.data() + block * static_cast<size_t>(r);
      if (std::memcmp(theirs, all.data(), block) == 0) continue;
      int64_t first = 0;
      while (std::memcmp(theirs + first * element, all.data() + first * element, element) == 0) ++first;
      ADD_FAILURE() << c.context << ": rank " << r << "'s result differs from rank 0's, first at element " << first
                    << ": " << element_bits(dtype, theirs, first) << " vs " << element_bits(dtype, all.data(), first);
    }
    // The result itself, within the rounding error of P - 1 additions (or multiplications).
    std::vector<Real> expected(static_cast<size_t>(c.count)), tolerance(static_cast<size_t>(c.count));
    for (int64_t i = 0; i < c.count; ++i) {
      Real acc = 0, magnitude = 0;
      for (int r = 0; r < size; ++r) {
        const Real x = noisy_value(dtype, op, r, i, c.seed);
        magnitude += std::fabs(x);
        acc = r == 0 ? x : op == ReduceOp::kProduct ? acc * x : acc + x;
      }
      if (op == ReduceOp::kAverage) {
        acc /= size;
        magnitude /= size;
      }
      expected[static_cast<size_t>(i)] = acc;
      tolerance[static_cast<size_t>(i)] =
          (size + 2) * u * (op == ReduceOp::kProduct ? std::fabs(acc) : magnitude) + absolute;
    }
    expect_elements(c.context, dtype, c.tensor.data(), expected, tolerance);
  }
}

INSTANTIATE_TEST_SUITE_P(FloatingDtypes, ConsistencyTest,
                         testing::Combine(testing::Values(DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16,
                                                          DataType::kFloat64),
                                          testing::Values(ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kProduct)),
                         [](const testing::TestParamInfo<std::tuple<DataType, ReduceOp>>& info) {
                           return std::string(dtype_name(std::get<0>(info.param))) + "_" +
                                  reduce_op_name(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace concord::mpitest
