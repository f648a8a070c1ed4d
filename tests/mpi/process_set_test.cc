// Process sets through the public C++ API under mpirun (1..4 ranks): init(InitOptions
// {process_sets}) after a shutdown(), then on every set (even ranks, odd ranks, the last
// rank alone) allreduce, allgather (rank-dependent rows), broadcast from a GLOBAL root and
// reducescatter for every dtype, and alltoall and barrier; a non-member's submission fails
// at once, a mismatch inside a set names global ranks and the set. The communicators are
// MPI_Comm_split ones here (the unit suite's are in-process). Leaves the default runtime
// running, as main() expects.
#include <algorithm>
#include <numeric>

#include "mpi_test_util.h"
#include "test_support/process_set_lists.h"

namespace concord::mpitest {
namespace {

using testlists::process_subsets;

// Every dtype's allreduce (Sum), allgather, broadcast and reducescatter on set `id`, checked
// against references built from the members' global ranks.
void exercise(int id, const std::vector<int>& members) {
  const int me = concord::rank();
  const int n = static_cast<int>(members.size());
  const int mine = process_set_rank(id);
  const int root = members.back();
  for (DataType dtype : all_dtypes()) {
    const std::string tag = "set" + std::to_string(id) + "." + dtype_name(dtype);
    Tensor sum(dtype, {5}), rows(dtype, {me + 1, 2}), message(dtype, {3}), scatter(dtype, {n + 1, 2});
    Tensor scattered(dtype, {reducescatter_rows(n + 1, n, mine), 2});
    fill(sum, [&](auto tag, int64_t i) { return additive_value<decltype(tag)>(dtype, me, i, 7); });
    fill(rows, [&](auto tag, int64_t) { return decltype(tag)(me % 8); });
    fill(message, [&](auto tag, int64_t i) { return additive_value<decltype(tag)>(dtype, me, i, 3); });
    fill(scatter, [&](auto tag, int64_t i) { return additive_value<decltype(tag)>(dtype, me, i, 9); });
    AllreduceOptions reduce;
    reduce.process_set = id;
    ReducescatterOptions rs;
    rs.process_set = id;
    const Handle h_sum = allreduce_async(tag + ".sum", sum.view(), sum.view(), reduce);
    const Handle h_gather = allgather_async(tag + ".gather", rows.view(), AllgatherOptions{id});
    const Handle h_bcast = broadcast_async(tag + ".bcast", message.view(), BroadcastOptions{root, id});
    const Handle h_rs = reducescatter_async(tag + ".rs", scatter.view(), scattered.view(), rs);
    std::vector<Real> expected(5), gathered, root_message(3), rows_sum;
    for (int64_t i = 0; i < 5; ++i)
      for (int q : members) expected[i] += additive_value<Real>(dtype, q, i, 7);
    for (int q : members) gathered.insert(gathered.end(), static_cast<size_t>(2 * (q + 1)), Real(q % 8));
    for (int64_t i = 0; i < 3; ++i) root_message[i] = additive_value<Real>(dtype, root, i, 3);
    const int64_t first = mine * ((n + 1) / n) + std::min(mine, (n + 1) % n);
    for (int64_t i = first * 2; i < (first + scattered.shape[0]) * 2; ++i) {
      Real total = 0;
      for (int q : members) total += additive_value<Real>(dtype, q, i, 9);
      rows_sum.push_back(total);
    }
    if (wait_ok(h_sum, describe("allreduce", tag, dtype, 5)))
      expect_elements(describe("allreduce", tag, dtype, 5), dtype, sum.data(), expected);
    if (wait_ok(h_gather, describe("allgather", tag, dtype, rows.count()))) {
      EXPECT_EQ(h_gather.output_shape().at(0) * 2, static_cast<int64_t>(gathered.size())) << tag;
      expect_elements(describe("allgather", tag, dtype, rows.count()), dtype, h_gather.output_bytes().data(), gathered);
    }
    if (wait_ok(h_bcast, describe("broadcast from global rank " + std::to_string(root), tag, dtype, 3)))
      expect_elements(describe("broadcast", tag, dtype, 3), dtype, message.data(), root_message);
    if (wait_ok(h_rs, describe("reducescatter", tag, dtype, scattered.count())))
      expect_elements(describe("reducescatter", tag, dtype, scattered.count()), dtype, scattered.data(), rows_sum);
  }
  std::vector<int32_t> send(n), received(n, -1);
  std::iota(send.begin(), send.end(), me * 100);
  const Handle h_a2a = alltoall_async("set" + std::to_string(id) + ".a2a",
                                      TensorView{send.data(), DataType::kInt32, {n}}, AlltoallOptions{{}, id});
  if (wait_ok(h_a2a, "alltoall on set " + std::to_string(id))) {
    const auto* got = reinterpret_cast<const int32_t*>(h_a2a.output_bytes().data());
    for (int j = 0; j < n; ++j)
      EXPECT_EQ(got[j], members[j] * 100 + mine) << "[rank " << me << "] alltoall on set " << id << " from " << j;
  }
  wait_ok(barrier_async(id), "barrier on set " + std::to_string(id));
}

TEST(ProcessSets, InitWithSetsRunsEveryCollectiveAmongTheMembers) {
  const int size = concord::size(), me = concord::rank();
  const auto sets = process_subsets(size);
  shutdown();
  init(InitOptions{-1, -1, sets});
  ASSERT_EQ(process_set_ids().size(), sets.size() + 1) << "[rank " << me << "]";
  for (size_t i = 0; i < sets.size(); ++i) {
    const int id = static_cast<int>(i) + 1;
    ASSERT_EQ(process_set_ranks(id), sets[i]) << "[rank " << me << "] set " << id;
    if (process_set_rank(id) >= 0) {
      exercise(id, sets[i]);
      continue;
    }
    std::vector<float> one(1, 1.0f);
    AllreduceOptions options;
    options.process_set = id;
    try {
      allreduce_async("outsider", TensorView{one.data(), DataType::kFloat32, {1}},
                      TensorView{one.data(), DataType::kFloat32, {1}}, options);
      ADD_FAILURE() << "[rank " << me << "] submitting to set " << id << " without being a member did not throw";
    } catch (const InvalidArgument& error) {
      EXPECT_NE(std::string(error.what()).find("is not in process set " + std::to_string(id)), std::string::npos)
          << error.what();
    }
  }
  // A mismatch inside the even ranks' set (3+ ranks: two members) names global ranks.
  if (size >= 3 && me % 2 == 0) {
    const int last = (size - 1) / 2 * 2;
    std::vector<float> bad(me == last ? 5 : 4, 1.0f);
    AllreduceOptions options;
    options.process_set = 1;
    const TensorView view{bad.data(), DataType::kFloat32, {static_cast<int64_t>(bad.size())}};
    const std::string error = wait_error<MismatchError>(allreduce_async("set.bad", view, view, options), "mismatch");
    EXPECT_NE(error.find("[5] on ranks [" + std::to_string(last) + "] in process set 1 (ranks [0, 2"),
              std::string::npos)
        << "[rank " << me << "] " << error;
  }
  wait_ok(barrier_async(0), "world barrier");  // nobody shuts down while others work in their sets
  shutdown();
  init();
  expect_allreduce_works("process_sets.after");
}

}  // namespace
}  // namespace concord::mpitest
