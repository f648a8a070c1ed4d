// Allgather: every dtype, equal sizes {0, 1, 7, 1023, > 1 MiB odd}, dim 0 differing per
// rank (with a rank contributing 0 rows), multi-dimensional shapes and a zero-size
// trailing dimension. Expected: the rank-ordered concatenation along dim 0 of every rank's
// deterministic input, element for element.
#include <functional>

#include "mpi_test_util.h"

namespace concord::mpitest {
namespace {

struct Layout {
  std::string label;
  std::function<int64_t(int rank)> rows;  // dim 0 of `rank`'s input
  std::vector<int64_t> trailing;          // the other dimensions, equal on every rank
};

std::vector<Layout> layouts(DataType dtype) {
  std::vector<Layout> result;
  for (int64_t n : test_counts(dtype)) result.push_back({"equal_" + std::to_string(n), [n](int) { return n; }, {}});
  result.push_back({"uneven_rank0_empty", [](int r) { return int64_t{(r * 3) % 5}; }, {}});
  result.push_back({"uneven_rank1_empty", [](int r) { return r == 1 ? 0 : int64_t{5000} * (r + 1) + r; }, {}});
  result.push_back({"multi_dim_rank2_empty", [](int r) { return int64_t{(r + 2) % 4}; }, {3, 5}});
  result.push_back({"multi_dim_1023_columns", [](int r) { return int64_t{40 + r}; }, {1023}});
  result.push_back({"all_empty", [](int) { return int64_t{0}; }, {4}});
  result.push_back({"zero_trailing_dim", [](int r) { return int64_t{r + 1}; }, {2, 0}});
  return result;
}

struct Case {
  std::string name;
  std::string context;
  Tensor input;
  Tensor original;
  Handle handle;
};

class AllgatherTest : public testing::TestWithParam<DataType> {};

TEST_P(AllgatherTest, ConcatenatesEveryRankAlongDim0) {
  const DataType dtype = GetParam();
  const int rank = concord::rank(), size = concord::size();
  const std::vector<Layout> all = layouts(dtype);
  std::vector<Case> cases;
  for (size_t k = 0; k < all.size(); ++k) {
    const Layout& layout = all[k];
    std::vector<int64_t> shape = {layout.rows(rank)};
    shape.insert(shape.end(), layout.trailing.begin(), layout.trailing.end());
    Case c;
    c.input = Tensor(dtype, shape);
    fill(c.input, [&](auto tag, int64_t i) { return additive_value<decltype(tag)>(dtype, rank, i, k, true); });
    c.original = c.input;
    c.name = std::string("allgather.") + dtype_name(dtype) + "." + layout.label;
    c.context = describe("allgather(ring, " + layout.label + ", this rank's shape " + shape_string(shape) + ")", c.name,
                         dtype, c.input.count());
    cases.push_back(std::move(c));
  }
  for (auto& c : cases) c.handle = allgather_async(c.name, c.input.view());
  std::vector<bool> ok(cases.size());
  for (size_t k = 0; k < cases.size(); ++k) ok[k] = wait_ok(cases[k].handle, cases[k].context);

  for (size_t k = 0; k < cases.size(); ++k) {
    if (!ok[k]) continue;
    const Case& c = cases[k];
    const Layout& layout = all[k];
    int64_t row_elements = 1;
    for (int64_t d : layout.trailing) row_elements *= d;
    std::vector<int64_t> expected_shape = {0};
    expected_shape.insert(expected_shape.end(), layout.trailing.begin(), layout.trailing.end());
    std::vector<Real> expected;
    for (int r = 0; r < size; ++r) {
      const int64_t rows = layout.rows(r);
      expected_shape[0] += rows;
      for (int64_t i = 0; i < rows * row_elements; ++i) expected.push_back(additive_value(dtype, r, i, k, true));
    }
    EXPECT_EQ(c.handle.output_shape(), expected_shape) << c.context << ": output_shape";
    const size_t expected_bytes = expected.size() * dtype_size(dtype);
    EXPECT_EQ(c.handle.output_bytes().size(), expected_bytes) << c.context << ": output_bytes().size()";
    if (c.handle.output_bytes().size() == expected_bytes)
      expect_elements(c.context + ", gathered output", dtype, c.handle.output_bytes().data(), expected);
    EXPECT_TRUE(c.input.bytes == c.original.bytes) << c.context << ": the input tensor was modified";
  }
}

INSTANTIATE_TEST_SUITE_P(EveryDtype, AllgatherTest, testing::ValuesIn(all_dtypes()),
                         [](const testing::TestParamInfo<DataType>& info) {
                           return std::string(dtype_name(info.param));
                         });

}  // namespace
}  // namespace concord::mpitest
