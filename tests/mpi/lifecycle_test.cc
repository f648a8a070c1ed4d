// Runtime lifecycle: every call before init() and after shutdown() throws StateError; an
// operation still pending at shutdown fails with StateError naming it; init() after
// shutdown() starts a working runtime again (also with InitOptions). Each test leaves the
// runtime running, as main() expects.
#include "mpi_test_util.h"
#include "pre_init.h"

namespace concord::mpitest {
namespace {

std::string here(const std::string& what) { return "[rank " + std::to_string(world_rank()) + "] " + what; }

TEST(Lifecycle, CallsBeforeInitThrowStateError) {
  const PreInitObservation& seen = pre_init_observation();
  EXPECT_FALSE(seen.initialized) << here("is_initialized() before init()");
  EXPECT_EQ(seen.rank, "") << here("rank() before init()");
  EXPECT_EQ(seen.size, "") << here("size() before init()");
  EXPECT_EQ(seen.allreduce, "") << here("allreduce_async() before init()");
  EXPECT_EQ(seen.allgather, "") << here("allgather_async() before init()");
  EXPECT_EQ(seen.broadcast, "") << here("broadcast_async() before init()");
}

template <typename Call>
void expect_state_error(Call&& call, const std::string& what) {
  try {
    call();
    ADD_FAILURE() << here(what) << " after shutdown() did not throw StateError";
  } catch (const StateError&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << here(what) << " after shutdown() threw the wrong error: " << e.what();
  }
}

/// A batch of allreduces that must come out right: `count` tensors submitted at once.
void expect_batch_works(const std::string& prefix, int count) {
  const int rank = concord::rank(), size = concord::size();
  std::vector<std::vector<int32_t>> data(static_cast<size_t>(count));
  std::vector<Handle> handles;
  for (int t = 0; t < count; ++t) {
    data[t].assign(static_cast<size_t>(3 + t), rank + t);
    const TensorView view{data[t].data(), DataType::kInt32, {3 + t}};
    handles.push_back(allreduce_async(prefix + std::to_string(t), view, view));
  }
  for (int t = 0; t < count; ++t) {
    const std::string what =
        describe("allreduce(sum, ring, in place)", prefix + std::to_string(t), DataType::kInt32, 3 + t);
    if (!wait_ok(handles[t], what)) continue;
    EXPECT_EQ(data[t], std::vector<int32_t>(static_cast<size_t>(3 + t), size * (size - 1) / 2 + size * t)) << what;
  }
}

TEST(Lifecycle, ShutdownFailsPendingCallsThrowAndInitRestarts) {
  const int rank = world_rank(), size = world_size();
  // Pending at shutdown: with 2+ ranks only rank 0 submits it, so it can never complete.
  float pending_value = 1;
  Handle pending;
  if (size > 1 && rank == 0) {
    try {
      pending = allreduce_async("lifecycle.pending", TensorView{&pending_value, DataType::kFloat32, {1}},
                                TensorView{&pending_value, DataType::kFloat32, {1}});
    } catch (const std::exception& e) {
      // Not rethrown: a rank that left this test here would skip the init() below (a
      // collective MPI_Comm_dup) and hang every rank in the next collective it reaches.
      ADD_FAILURE() << here("submitting 'lifecycle.pending' threw: ") << e.what();
    }
  }
  // One completed collective before anyone shuts down: shutdown() on any rank stops every
  // rank's runtime, so without it a rank that reaches shutdown() first can stop rank 0's
  // runtime before rank 0 submits, and the submission throws StateError instead. Rank 0
  // submits this one after the pending one, and no rank finishes it before rank 0 submits.
  expect_allreduce_works("lifecycle.before_shutdown");

  shutdown();
  EXPECT_FALSE(is_initialized()) << here("is_initialized() after shutdown()");
  float x = 1;
  const TensorView view{&x, DataType::kFloat32, {1}};
  expect_state_error([] { (void)concord::rank(); }, "rank()");
  expect_state_error([] { (void)concord::size(); }, "size()");
  expect_state_error([] { (void)concord::local_rank(); }, "local_rank()");
  expect_state_error([] { (void)concord::local_size(); }, "local_size()");
  expect_state_error([&] { (void)allreduce_async("lifecycle.after", view, view); }, "allreduce_async()");
  expect_state_error([&] { (void)allgather_async("lifecycle.after", view); }, "allgather_async()");
  expect_state_error([&] { (void)broadcast_async("lifecycle.after", view); }, "broadcast_async()");
  shutdown();  // a second shutdown is a no-op
  if (pending.state()) {
    EXPECT_TRUE(pending.poll()) << here("a pending allreduce is not done after shutdown()");
    const std::string message =
        wait_error<StateError>(pending, here("allreduce 'lifecycle.pending' pending at shutdown"));
    EXPECT_NE(message.find("lifecycle.pending"), std::string::npos)
        << here("the StateError of a pending operation does not name it: ") << message;
    EXPECT_EQ(pending_value, 1.0f) << here("the pending allreduce wrote its buffer");
  }

  // Restart with options: fusion disabled, a shorter cycle.
  init(InitOptions{0.5, 0, {}});
  EXPECT_TRUE(is_initialized()) << here("is_initialized() after the second init()");
  EXPECT_EQ(concord::rank(), rank) << here("rank() after re-init");
  EXPECT_EQ(concord::size(), size) << here("size() after re-init");
  expect_batch_works("lifecycle.unfused.", 12);
  expect_allreduce_works("lifecycle.pending");  // the name of the failed operation is free again

  // And once more with the defaults, as the rest of the suite expects.
  shutdown();
  init();
  EXPECT_TRUE(is_initialized()) << here("is_initialized() after the third init()");
  expect_batch_works("lifecycle.fused.", 12);
}

}  // namespace
}  // namespace concord::mpitest
