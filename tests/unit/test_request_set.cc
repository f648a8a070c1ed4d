// RequestSet and reap_one (src/transport/request_set.h), the one way algorithms post and
// reap requests, and the tag table (src/transport/tags.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>

#include "transport/request_set.h"
#include "transport/tags.h"

namespace concord {
namespace {

// Completes on its `tests_until_done`-th test(); counts the tests in `*tested`.
class FakeRequest : public TransportRequest {
 public:
  FakeRequest(int tests_until_done, int* tested) : remaining_(tests_until_done), tested_(tested) {}
  bool test() override {
    ++*tested_;
    return --remaining_ <= 0;
  }

 private:
  int remaining_;
  int* tested_;
};

RequestPtr fake(int tests_until_done, int* tested) { return std::make_unique<FakeRequest>(tests_until_done, tested); }

TEST(RequestSet, ReapDropsCompletedRequestsInAnyOrder) {
  int tested = 0;
  RequestSet set;
  set.post(fake(3, &tested));
  set.post(fake(1, &tested));
  set.post(nullptr);  // ignored
  EXPECT_EQ(set.size(), 2u);
  EXPECT_FALSE(set.reap());
  EXPECT_EQ(set.size(), 1u) << "the second request completed on its first test";
  EXPECT_FALSE(set.reap());
  EXPECT_TRUE(set.reap());
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(tested, 4);
}

TEST(RequestSet, ReapInOrderStopsAtTheFirstPending) {
  int first = 0, second = 0;
  RequestSet set;
  set.post(fake(2, &first));
  set.post(fake(1, &second));
  EXPECT_FALSE(set.reap_in_order());
  EXPECT_EQ(second, 0) << "the second request is not tested while the first is pending";
  EXPECT_TRUE(set.reap_in_order());
  EXPECT_EQ(first, 2);
  EXPECT_EQ(second, 1);
}

TEST(RequestSet, WaitBlocksUntilEveryRequestCompleted) {
  int tested = 0;
  RequestSet set;
  for (int i = 1; i <= 5; ++i) set.post(fake(i, &tested));
  set.wait();
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(tested, 1 + 2 + 3 + 4 + 5);
}

TEST(RequestSet, ReapOneEmptiesTheSlotOnceComplete) {
  int tested = 0;
  RequestPtr slot = fake(2, &tested);
  EXPECT_FALSE(reap_one(slot));
  EXPECT_TRUE(reap_one(slot));
  EXPECT_EQ(slot, nullptr);
  EXPECT_TRUE(reap_one(slot)) << "an empty slot is complete";
  EXPECT_EQ(tested, 2) << "a completed request is never tested again";
}

TEST(Tags, EveryTagIsDistinct) {
  std::set<int> seen;
  for (int tag : tags::kAll) EXPECT_TRUE(seen.insert(tag).second) << "tag " << tag << " is used twice";
  // The in-process control collectives use kInProcessControl and kInProcessControl + 1.
  EXPECT_EQ(seen.count(tags::kInProcessControl + 1), 0u);
  // MPI guarantees tags up to 32767 (MPI_TAG_UB >= 32767); only the in-process transport
  // uses larger ones.
  for (int tag : tags::kAll)
    if (tag != tags::kInProcessControl) EXPECT_LE(tag, 32767) << "tag " << tag << " is above MPI's guaranteed range";
}

// The ranges of the layout in tags.h do not overlap: dense collectives 1..89, the KVStore's
// key check 90..99, the sparse collectives 0x5300..0x53ff.
TEST(Tags, EachLiesInItsRange) {
  for (int tag : {tags::kKeyCheckHeader, tags::kKeyCheckVerdict, tags::kKeyDigest})
    EXPECT_TRUE(tag >= 90 && tag <= 99) << "KVStore tag " << tag << " outside 90..99";
  for (int tag : {tags::kSparseCountExchange, tags::kSparseRotation, tags::kSparseBalance, tags::kSparseTreeReduce})
    EXPECT_TRUE(tag >= 0x5300 && tag <= 0x53ff) << "sparse tag " << tag << " outside 0x5300..0x53ff";
  const std::set<int> others = {tags::kKeyCheckHeader, tags::kKeyCheckVerdict,     tags::kKeyDigest,
                                tags::kWake,           tags::kSparseCountExchange, tags::kSparseRotation,
                                tags::kSparseBalance,  tags::kSparseTreeReduce,    tags::kInProcessControl,
                                tags::kGroupFormation};
  for (int tag : tags::kAll)
    if (others.count(tag) == 0)
      EXPECT_TRUE(tag >= 1 && tag <= 89) << "dense collective tag " << tag << " outside 1..89";
}

}  // namespace
}  // namespace concord
