// Broadcast: every dtype x every root x sizes {scalar, 0, 1, 7, 1023} plus
// multi-dimensional shapes, and > 1 MiB (odd) from the first and last root; all roots in
// flight at once. Non-root ranks start from values
// that differ from the root's in every element, so a broadcast that left any element alone
// fails.
#include "mpi_test_util.h"

namespace concord::mpitest {
namespace {

struct Case {
  std::string name;
  std::string context;
  int root = 0;
  uint64_t seed = 0;
  Tensor tensor;
  Handle handle;
};

class BroadcastTest : public testing::TestWithParam<DataType> {};

TEST_P(BroadcastTest, EveryRankGetsTheRootsTensorFromEveryRoot) {
  const DataType dtype = GetParam();
  const int rank = concord::rank(), size = concord::size();
  std::vector<std::vector<int64_t>> shapes = {{}};
  for (int64_t n : test_counts(dtype)) shapes.push_back({n});
  const size_t large = shapes.size() - 1;
  shapes.push_back({3, 0, 2});
  shapes.push_back({17, 5, 3});

  std::vector<Case> cases;
  for (int root = 0; root < size; ++root) {
    for (size_t s = 0; s < shapes.size(); ++s) {
      // The > 1 MiB tensor from the first and the last root only (CPU time on 2 cores).
      if (s == large && root != 0 && root != size - 1) continue;
      Case c;
      c.root = root;
      c.seed = s * 7 + static_cast<uint64_t>(root);
      c.tensor = Tensor(dtype, shapes[s]);
      fill(c.tensor, [&](auto tag, int64_t i) {
        const auto value = additive_value<decltype(tag)>(dtype, root, i, c.seed, true);
        return rank == root ? value : value + 1;  // exact, and never the root's value
      });
      c.name = std::string("broadcast.") + dtype_name(dtype) + ".root" + std::to_string(root) + ".shape" +
               shape_string(shapes[s]);
      c.context =
          describe("broadcast(binomial tree, root " + std::to_string(root) + ", shape " + shape_string(shapes[s]) + ")",
                   c.name, dtype, c.tensor.count());
      cases.push_back(std::move(c));
    }
  }
  for (auto& c : cases) c.handle = broadcast_async(c.name, c.tensor.view(), BroadcastOptions{c.root});
  std::vector<bool> ok(cases.size());
  for (size_t k = 0; k < cases.size(); ++k) ok[k] = wait_ok(cases[k].handle, cases[k].context);

  for (size_t k = 0; k < cases.size(); ++k) {
    if (!ok[k]) continue;
    const Case& c = cases[k];
    std::vector<Real> expected(static_cast<size_t>(c.tensor.count()));
    for (int64_t i = 0; i < c.tensor.count(); ++i)
      expected[static_cast<size_t>(i)] = additive_value(dtype, c.root, i, c.seed, true);
    expect_elements(c.context, dtype, c.tensor.data(), expected);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryDtype, BroadcastTest, testing::ValuesIn(all_dtypes()),
                         [](const testing::TestParamInfo<DataType>& info) {
                           return std::string(dtype_name(info.param));
                         });

}  // namespace
}  // namespace concord::mpitest
