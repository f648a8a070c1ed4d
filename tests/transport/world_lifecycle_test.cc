// Leaving and aborting the process's transport world (transport_world.h), what elastic
// training's reset relies on, in one process (a world of one, no launcher):
//   - abort_process_world() fails a receive that is waiting, from another thread, with a
//     CommError carrying the reason, within a few liveness intervals;
//   - after leave_process_world() the next process_world() is a new, working world (fresh
//     endpoints: a message of the old world cannot match in the new one);
//   - an MPI world refuses both (StateError), since MPI is initialised once.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <thread>

#include "concord/errors.h"
#include "transport/request_set.h"
#include "transport/transport_world.h"
#include "transport/ucx_world.h"

namespace concord {
namespace {

TEST(WorldLifecycle, AbortFailsAWaitingReceiveThenANewWorldWorks) {
  if (!ucx_available()) GTEST_SKIP() << "built without UCX";
  ::setenv("CONCORD_TRANSPORT", "ucx", 1);
  auto comm = process_world().duplicate("test.abort");
  int32_t never = 0, orphan = 7;
  auto unreceived = comm->isend(&orphan, sizeof orphan, 0, 9);  // to itself; nobody receives it here
  RequestSet receives;
  receives.post(comm->irecv(&never, sizeof never, 0, 5));  // nobody sends it
  std::thread aborter([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    abort_process_world("drill: peer declared lost");
  });
  const auto start = std::chrono::steady_clock::now();
  try {
    receives.wait();
    ADD_FAILURE() << "the receive completed although nobody sent it";
  } catch (const CommError& error) {
    EXPECT_NE(std::string(error.what()).find("drill: peer declared lost"), std::string::npos) << error.what();
  }
  aborter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  unreceived.reset();
  comm.reset();

  // The old world's unreceived message (tag 9) must never match in the new one.
  leave_process_world();
  ::setenv("CONCORD_TRANSPORT", "ucx", 1);
  {
    auto stale = process_world().duplicate("test.abort");
    int32_t leftover = 0;
    auto receive = stale->irecv(&leftover, sizeof leftover, 0, 9);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    bool matched = false;
    while (!matched && std::chrono::steady_clock::now() < until) matched = receive->test();
    EXPECT_FALSE(matched) << "a message sent in the old world matched in the new one (payload " << leftover << ")";
    abort_process_world("end of the stale-message check");
    RequestSet pending;
    pending.post(std::move(receive));
    EXPECT_THROW(pending.wait(), CommError);
  }
  leave_process_world();
  auto fresh = process_world().duplicate("test.fresh");
  int32_t sent = 42, got = 0;
  RequestSet exchange;
  exchange.post(fresh->irecv(&got, sizeof got, 0, 5));
  exchange.post(fresh->isend(&sent, sizeof sent, 0, 5));
  exchange.wait();
  EXPECT_EQ(got, 42);
  fresh.reset();
  leave_process_world();
}

TEST(WorldLifecycle, MpiWorldRefusesLeaveAndAbort) {
  ::setenv("CONCORD_TRANSPORT", "mpi", 1);
  EXPECT_EQ(process_world().origin().transport, "mpi");
  EXPECT_THROW(abort_process_world("drill"), StateError);
  EXPECT_THROW(leave_process_world(), StateError);
}

}  // namespace
}  // namespace concord
