// The UCX transport's any-source receive (UcxCommunicator::irecv_any_source), under the local
// store launcher: every rank but 0 sends its rank to rank 0 twice with one tag; rank 0 posts
// 2(P-1) receives from any source and must see each sender exactly twice, the payload equal
// to the reported source, and a second communicator's messages with the same tag never
// matched (the communicator id stays in the match).
#include <gtest/gtest.h>

#include <map>

#include "transport/request_set.h"
#include "transport/transport_world.h"
#include "transport/ucx/ucx_communicator.h"

namespace concord {
namespace {

TEST(UcxAnySource, ReceivesFromEverySenderAndReportsIt) {
  auto comm = process_world().duplicate("test.any_source");
  auto other = process_world().duplicate("test.any_source.other");
  auto* ucx = dynamic_cast<UcxCommunicator*>(comm.get());
  ASSERT_NE(ucx, nullptr) << "runs over UCX only (CONCORD_TRANSPORT=ucx)";
  const int P = comm->size(), rank = comm->rank();
  constexpr int kTag = 7;
  if (rank != 0) {
    const int32_t mine = rank, decoy = -rank;
    RequestSet sends;
    sends.post(other->isend(&decoy, sizeof decoy, 0, kTag));  // same tag, another communicator
    sends.post(comm->isend(&mine, sizeof mine, 0, kTag));
    sends.post(comm->isend(&mine, sizeof mine, 0, kTag));
    sends.wait();
  } else {
    const int count = 2 * (P - 1);
    std::vector<int32_t> payloads(count, -1000);
    std::vector<int> sources(count, -1);
    RequestSet receives;
    for (int i = 0; i < count; ++i)
      receives.post(ucx->irecv_any_source(&payloads[i], sizeof(int32_t), kTag, &sources[i]));
    receives.wait();
    std::map<int, int> seen;
    for (int i = 0; i < count; ++i) {
      EXPECT_EQ(payloads[i], sources[i]) << "receive " << i << " reported source " << sources[i] << " P=" << P;
      ++seen[sources[i]];
    }
    for (int r = 1; r < P; ++r) EXPECT_EQ(seen[r], 2) << "messages from rank " << r << " P=" << P;
    std::vector<int32_t> decoys(P - 1);
    RequestSet drain;  // the other communicator's messages are still there, unmatched
    for (int r = 1; r < P; ++r) drain.post(other->irecv(&decoys[r - 1], sizeof(int32_t), r, kTag));
    drain.wait();
    for (int r = 1; r < P; ++r) EXPECT_EQ(decoys[r - 1], -r) << "decoy from rank " << r;
  }
  comm->barrier();
}

}  // namespace
}  // namespace concord
