// UcxWorker's transport settings, in one process: the rendezvous threshold is raised to
// kRemoteEagerLimit only when the launcher says this is the job's one process on its host
// (every peer then is reached over the network, where a rendezvous per message costs a
// round trip behind the other direction's data), never when peers share the host or the
// launcher does not say, and never over the user's own UCX_RNDV_THRESH.
#include <gtest/gtest.h>

#include <cstdlib>

#include "transport/ucx/ucx_worker.h"

namespace concord {
namespace {

TEST(UcxWorker, EagerUpToOneMebibyteOnlyWhenEveryPeerIsRemote) {
  ASSERT_EQ(std::getenv("UCX_RNDV_THRESH"), nullptr) << "run without UCX_RNDV_THRESH set";
  EXPECT_TRUE(UcxWorker(1).remote_eager()) << "local_size 1: every peer on another host";
  EXPECT_FALSE(UcxWorker(2).remote_eager()) << "local_size 2: a peer shares this host's memory";
  EXPECT_FALSE(UcxWorker(0).remote_eager()) << "local_size 0: the launcher did not say";
}

TEST(UcxWorker, TheUsersThresholdWins) {
  ::setenv("UCX_RNDV_THRESH", "32k", 1);
  const bool raised = UcxWorker(1).remote_eager();
  ::unsetenv("UCX_RNDV_THRESH");
  EXPECT_FALSE(raised) << "UCX_RNDV_THRESH=32k set by the user was overridden";
}

}  // namespace
}  // namespace concord
