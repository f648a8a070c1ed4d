// The in-process multi-rank transport (src/transport/inprocess_communicator.h) the other
// multi-rank tests stand on: MPI matching order, control collectives, errors, counters.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstring>
#include <thread>

#include "concord/errors.h"
#include "transport/inprocess_communicator.h"
#include "transport/request_set.h"

namespace concord {
namespace {

// Equal sizes, so that a message matched out of order shows up as wrong content (a size
// mismatch would throw on one rank and leave the other waiting).
std::vector<uint8_t> payload(int sequence) {
  std::vector<uint8_t> bytes(12);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(sequence * 7 + i);
  return bytes;
}

// Messages between one pair with one tag arrive in send order, whether the receive was
// posted before the send (posted queue) or after it (unexpected queue).
TEST(InProcessTransport, MessagesBetweenAPairWithOneTagArriveInOrder) {
  constexpr int kMessages = 60;
  std::vector<std::vector<uint8_t>> received(kMessages);
  std::barrier sync(2);  // a thread barrier, not the transport's: only p2p is under test
  InProcessWorld::run(2, [&](Communicator& comm) {
    RequestSet requests;
    if (comm.rank() == 1) {
      for (int i = 0; i < kMessages / 2; ++i) {
        received[i].resize(payload(i).size());
        requests.post(comm.irecv(received[i].data(), received[i].size(), 0, 5));
      }
    }
    sync.arrive_and_wait();  // half of the receives are posted before the sends
    if (comm.rank() == 0) {
      std::vector<std::vector<uint8_t>> sent;
      for (int i = 0; i < kMessages; ++i) sent.push_back(payload(i));
      for (int i = 0; i < kMessages; ++i) requests.post(comm.isend(sent[i].data(), sent[i].size(), 1, 5));
      sync.arrive_and_wait();  // sends to receives not posted yet complete when those are posted
      requests.wait();
    } else {
      sync.arrive_and_wait();  // the other half after every send has been posted
    }
    if (comm.rank() == 1) {
      for (int i = kMessages / 2; i < kMessages; ++i) {
        received[i].resize(payload(i).size());
        requests.post(comm.irecv(received[i].data(), received[i].size(), 0, 5));
      }
      requests.wait();
    }
  });
  for (int i = 0; i < kMessages; ++i) EXPECT_EQ(received[i], payload(i)) << "message " << i;
}

// Sends are rendezvous, as MPI's above its eager limit: a send completes only once a
// receive matches it, and the receiver gets the sender's buffer as it is then.
TEST(InProcessTransport, SendCompletesWhenMatchedAndCarriesTheBufferAsItIsThen) {
  std::barrier sync(2);
  InProcessWorld::run(2, [&](Communicator& comm) {
    std::vector<uint8_t> buffer(8, 1);
    if (comm.rank() == 0) {
      RequestPtr send = comm.isend(buffer.data(), buffer.size(), 1, 3);
      EXPECT_FALSE(send->test()) << "rank 0: a send completed before any receive was posted";
      std::fill(buffer.begin(), buffer.end(), 2);  // not allowed under MPI: shows what goes
      sync.arrive_and_wait();
      sync.arrive_and_wait();  // rank 1 has posted and tested its receive
      EXPECT_TRUE(send->test()) << "rank 0: the matched send did not complete";
    } else {
      sync.arrive_and_wait();
      RequestPtr receive = comm.irecv(buffer.data(), buffer.size(), 0, 3);
      EXPECT_TRUE(receive->test()) << "rank 1: a receive of a waiting send did not complete";  // copies now
      sync.arrive_and_wait();
      EXPECT_EQ(buffer, std::vector<uint8_t>(8, 2)) << "rank 1: the payload was not read at match time";
    }
  });
}

TEST(InProcessTransport, ReceivesMatchBySourceAndTag) {
  int from_tag_a = 0, from_tag_b = 0;
  std::vector<int> by_source(4, -1);
  InProcessWorld::run(4, [&](Communicator& comm) {
    RequestSet requests;
    const int rank = comm.rank();
    int value = 100 + rank, a = 1, b = 2;
    if (rank != 0) requests.post(comm.isend(&value, sizeof value, 0, 9));
    if (rank == 1) {  // tag 7 then tag 8; rank 0 receives tag 8 first
      requests.post(comm.isend(&a, sizeof a, 0, 7));
      requests.post(comm.isend(&b, sizeof b, 0, 8));
    }
    if (rank == 0) {
      for (int source : {3, 1, 2}) requests.post(comm.irecv(&by_source[source], sizeof(int), source, 9));
      requests.post(comm.irecv(&from_tag_b, sizeof(int), 1, 8));
      requests.post(comm.irecv(&from_tag_a, sizeof(int), 1, 7));
    }
    requests.wait();
    EXPECT_TRUE(requests.empty()) << "wait_all clears the vector";
  });
  EXPECT_EQ(from_tag_a, 1);
  EXPECT_EQ(from_tag_b, 2);
  for (int source = 1; source < 4; ++source) EXPECT_EQ(by_source[source], 100 + source) << "source " << source;
}

TEST(InProcessTransport, ZeroByteMessagesComplete) {
  InProcessWorld::run(3, [&](Communicator& comm) {
    RequestSet requests;
    const int right = (comm.rank() + 1) % 3, left = (comm.rank() + 2) % 3;
    requests.post(comm.irecv(nullptr, 0, left, 1));
    requests.post(comm.isend(nullptr, 0, right, 1));
    requests.wait();
  });
  SUCCEED();
}

TEST(InProcessTransport, SizeMismatchIsCommError) {
  EXPECT_THROW(InProcessWorld::run(2,
                                   [](Communicator& comm) {
                                     uint64_t big = 0;
                                     uint32_t small = 1;
                                     RequestSet requests;
                                     if (comm.rank() == 1) requests.post(comm.irecv(&big, sizeof big, 0, 3));
                                     comm.barrier();  // the receive is posted: the send matches it
                                     if (comm.rank() == 0) requests.post(comm.isend(&small, sizeof small, 1, 3));
                                   }),
               CommError);
}

TEST(InProcessTransport, PeerOutsideTheWorldIsInvalidArgument) {
  EXPECT_THROW(InProcessWorld::run(2,
                                   [](Communicator& comm) {
                                     int x = 0;
                                     if (comm.rank() == 0) comm.isend(&x, sizeof x, 2, 0);
                                     if (comm.rank() == 1) comm.irecv(&x, sizeof x, -1, 0);
                                   }),
               InvalidArgument);
}

TEST(InProcessTransport, RunRethrowsARanksExceptionAfterJoiningAll) {
  std::atomic<int> finished{0};
  EXPECT_THROW(InProcessWorld::run(5,
                                   [&](Communicator& comm) {
                                     if (comm.rank() == 3) throw MismatchError("rank 3 failed");
                                     std::this_thread::sleep_for(std::chrono::milliseconds(20));
                                     ++finished;
                                   }),
               MismatchError);
  EXPECT_EQ(finished.load(), 4) << "run() returned before every other rank finished";
}

// A rank that dies before sending must not hang the others: their receives (point-to-point,
// inside a control collective, and inside split()) fail with CommError, and run() rethrows
// the rank's own error, not the CommErrors it caused.
TEST(InProcessTransport, AFailedRankFailsTheOthersWaitsInsteadOfHangingThem) {
  for (int P : {2, 3, 5}) {
    std::atomic<int> comm_errors{0};
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(InProcessWorld::run(P,
                                     [&](Communicator& comm) {
                                       if (comm.rank() == 0) {
                                         std::this_thread::sleep_for(std::chrono::milliseconds(20));
                                         throw MismatchError("rank 0 failed before the broadcast");
                                       }
                                       try {
                                         if (comm.rank() % 3 == 1) {
                                           std::vector<uint8_t> data;
                                           comm.broadcast_bytes(data, 0);
                                         } else if (comm.rank() % 3 == 2) {
                                           comm.split(0, comm.rank());
                                         } else {
                                           uint8_t byte = 0;
                                           RequestSet requests;
                                           requests.post(comm.irecv(&byte, 1, 0, 7));
                                           requests.wait();
                                         }
                                       } catch (const CommError& error) {
                                         EXPECT_NE(std::string(error.what()).find("failed"), std::string::npos)
                                             << "P " << P << " rank " << comm.rank() << ": " << error.what();
                                         ++comm_errors;
                                         throw;
                                       }
                                     }),
                 MismatchError)
        << "P " << P;
    EXPECT_EQ(comm_errors.load(), P - 1) << "P " << P << ": every surviving rank's wait fails";
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30)) << "P " << P;
  }
}

TEST(InProcessTransport, GatherBytesToEveryRoot) {
  constexpr int P = 6;
  for (int root = 0; root < P; ++root) {
    std::vector<std::vector<std::vector<uint8_t>>> result(P);
    InProcessWorld::run(P, [&](Communicator& comm) {
      std::vector<uint8_t> mine(static_cast<size_t>(comm.rank() * 3), static_cast<uint8_t>(comm.rank() + 1));
      result[comm.rank()] = comm.gather_bytes(mine, root);
    });
    for (int r = 0; r < P; ++r) {
      if (r != root) {
        EXPECT_TRUE(result[r].empty()) << "root " << root << " rank " << r;
        continue;
      }
      ASSERT_EQ(result[r].size(), size_t{P}) << "root " << root;
      for (int s = 0; s < P; ++s)
        EXPECT_EQ(result[r][s], std::vector<uint8_t>(static_cast<size_t>(s * 3), static_cast<uint8_t>(s + 1)))
            << "root " << root << " entry " << s << " (rank 0's is empty)";
    }
  }
}

TEST(InProcessTransport, BroadcastBytesFromEveryRoot) {
  constexpr int P = 5;
  for (int root = 0; root < P; ++root) {
    for (size_t length : {size_t{0}, size_t{1}, size_t{1000}}) {
      std::vector<std::vector<uint8_t>> result(P);
      InProcessWorld::run(P, [&](Communicator& comm) {
        std::vector<uint8_t> data(comm.rank() == root ? length : 17, static_cast<uint8_t>(comm.rank()));
        if (comm.rank() == root)
          for (size_t i = 0; i < length; ++i) data[i] = static_cast<uint8_t>(i * 31 + root);
        comm.broadcast_bytes(data, root);
        result[comm.rank()] = data;
      });
      for (int r = 0; r < P; ++r)
        EXPECT_EQ(result[r], result[root]) << "root " << root << " length " << length << " rank " << r;
      EXPECT_EQ(result[root].size(), length);
    }
  }
}

TEST(InProcessTransport, BarrierHoldsEveryRankUntilAllArrive) {
  constexpr int P = 6;
  constexpr int kRounds = 5;
  std::atomic<int> arrived{0};
  std::vector<int> violations(P, 0);
  InProcessWorld::run(P, [&](Communicator& comm) {
    for (int round = 1; round <= kRounds; ++round) {
      if (comm.rank() == round % P) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ++arrived;
      comm.barrier();
      if (arrived.load() < round * P) ++violations[comm.rank()];
      comm.barrier();  // nobody starts the next round before everyone checked this one
    }
  });
  for (int r = 0; r < P; ++r) EXPECT_EQ(violations[r], 0) << "rank " << r << " left a barrier early";
}

TEST(InProcessTransport, CountersCountBytesAndMessages) {
  std::vector<TrafficCounters> counters(2);
  InProcessWorld::run(2, [&](Communicator& comm) {
    std::vector<uint8_t> buffer(100);
    RequestSet requests;
    if (comm.rank() == 0) {
      requests.post(comm.isend(buffer.data(), 100, 1, 0));
      requests.post(comm.isend(buffer.data(), 28, 1, 0));
      requests.post(comm.isend(buffer.data(), 0, 1, 0));
    } else {
      requests.post(comm.irecv(buffer.data(), 100, 0, 0));
      requests.post(comm.irecv(buffer.data(), 28, 0, 0));
      requests.post(comm.irecv(buffer.data(), 0, 0, 0));
    }
    requests.wait();
    counters[comm.rank()] = comm.counters();
    comm.reset_counters();
    EXPECT_EQ(comm.counters().bytes_sent + comm.counters().bytes_received + comm.counters().messages_sent +
                  comm.counters().messages_received,
              0u);
  });
  EXPECT_EQ(counters[0].bytes_sent, 128u);
  EXPECT_EQ(counters[0].messages_sent, 3u);
  EXPECT_EQ(counters[0].bytes_received, 0u);
  EXPECT_EQ(counters[1].bytes_received, 128u);
  EXPECT_EQ(counters[1].messages_received, 3u);
  EXPECT_EQ(counters[1].bytes_sent, 0u);
}

// ---- split(color, key) ----------------------------------------------------------------

// Each rank of `sub` sends `value` to its right neighbour (sub rank + 1) and returns what
// its left neighbour sent, so every pair of the sub-communicator exchanges one message.
int ring_exchange(Communicator& sub, int value) {
  int received = -1;
  RequestSet requests;
  requests.post(sub.irecv(&received, sizeof received, (sub.rank() + sub.size() - 1) % sub.size(), 3));
  requests.post(sub.isend(&value, sizeof value, (sub.rank() + 1) % sub.size(), 3));
  requests.wait();
  return received;
}

class InProcessSplit : public ::testing::TestWithParam<int> {};

// Even and odd ranks form two groups; messages with the same tag stay inside each group.
TEST_P(InProcessSplit, ByParityKeepsRankOrderAndIsolatesGroups) {
  const int P = GetParam();
  std::vector<int> sizes(P), ranks(P), from_left(P);
  InProcessWorld::run(P, [&](Communicator& comm) {
    auto sub = comm.split(comm.rank() % 2, comm.rank());
    ASSERT_NE(sub, nullptr) << "rank " << comm.rank();
    sizes[comm.rank()] = sub->size();
    ranks[comm.rank()] = sub->rank();
    from_left[comm.rank()] = ring_exchange(*sub, comm.rank());
  });
  for (int r = 0; r < P; ++r) {
    const int parity = r % 2, members = (P - parity + 1) / 2;
    EXPECT_EQ(sizes[r], members) << "P=" << P << " rank " << r;
    EXPECT_EQ(ranks[r], r / 2) << "P=" << P << " rank " << r;
    const int left = ((r / 2 + members - 1) % members) * 2 + parity;
    EXPECT_EQ(from_left[r], left) << "P=" << P << " rank " << r << " received from the wrong rank";
  }
}

// Nodes of 3 ranks (the last one may be smaller), keys reversing the order inside a node;
// every rank sends its world rank to sub rank 0, which checks who is who.
TEST_P(InProcessSplit, ByNodeWithReversedKeys) {
  const int P = GetParam();
  constexpr int kPerNode = 3;
  std::vector<int> ranks(P, -1);
  std::vector<std::vector<int>> gathered(P);
  InProcessWorld::run(P, [&](Communicator& comm) {
    const int node = comm.rank() / kPerNode;
    auto sub = comm.split(node, -comm.rank());
    ranks[comm.rank()] = sub->rank();
    RequestSet requests;
    int mine = comm.rank();
    std::vector<int>& all = gathered[comm.rank()];
    if (sub->rank() == 0) {
      all.assign(sub->size(), -1);
      all[0] = mine;
      for (int s = 1; s < sub->size(); ++s) requests.post(sub->irecv(&all[s], sizeof(int), s, 4));
    } else {
      requests.post(sub->isend(&mine, sizeof mine, 0, 4));
    }
    requests.wait();
  });
  for (int r = 0; r < P; ++r) {
    const int node = r / kPerNode, last = std::min(P, (node + 1) * kPerNode) - 1;
    EXPECT_EQ(ranks[r], last - r) << "P=" << P << " rank " << r << ": key -rank reverses the node's order";
    if (r != last) continue;  // the node's sub rank 0
    ASSERT_EQ(gathered[r].size(), static_cast<size_t>(last - node * kPerNode + 1)) << "P=" << P << " rank " << r;
    for (size_t s = 0; s < gathered[r].size(); ++s)
      EXPECT_EQ(gathered[r][s], last - static_cast<int>(s)) << "P=" << P << " node " << node << " sub rank " << s;
  }
}

// Several splits in a row (new rounds of the rendezvous) and a split of a split.
TEST_P(InProcessSplit, RepeatedAndNestedSplits) {
  const int P = GetParam();
  std::vector<std::vector<int>> sizes(P);
  InProcessWorld::run(P, [&](Communicator& comm) {
    for (int groups = 1; groups <= 4; ++groups) {
      auto sub = comm.split(comm.rank() % groups, comm.rank());
      sizes[comm.rank()].push_back(sub->size());
      auto half = sub->split(sub->rank() < sub->size() / 2 ? 0 : 1, 0);
      sizes[comm.rank()].push_back(half->size());
      ring_exchange(*half, comm.rank());
    }
  });
  for (int r = 0; r < P; ++r) {
    ASSERT_EQ(sizes[r].size(), 8u) << "P=" << P << " rank " << r;
    for (int groups = 1; groups <= 4; ++groups) {
      const int members = (P - r % groups + groups - 1) / groups, sub_rank = r / groups;
      const int first_half = members / 2;
      EXPECT_EQ(sizes[r][2 * (groups - 1)], members) << "P=" << P << " rank " << r << " groups " << groups;
      EXPECT_EQ(sizes[r][2 * (groups - 1) + 1], sub_rank < first_half ? first_half : members - first_half)
          << "P=" << P << " rank " << r << " groups " << groups;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks1To16, InProcessSplit, ::testing::Range(1, 17),
                         [](const auto& info) { return "P" + std::to_string(info.param); });

TEST(InProcessTransport, SplitWithNegativeColorGivesNoCommunicator) {
  std::vector<int> sizes(5, -2);
  InProcessWorld::run(5, [&](Communicator& comm) {
    auto sub = comm.split(comm.rank() == 2 ? -1 : 7, 0);
    sizes[comm.rank()] = sub ? sub->size() : -1;
  });
  EXPECT_EQ(sizes, (std::vector<int>{4, 4, -1, 4, 4}));
}

// A sub-communicator's counters start at zero; its traffic also shows in its parent's and
// grandparent's counters; splitting itself sends nothing.
TEST(InProcessTransport, SplitCountersStartAtZeroAndAddUpInAncestors) {
  std::vector<TrafficCounters> world(4), child(4), grandchild(4);
  InProcessWorld::run(4, [&](Communicator& comm) {
    const TrafficCounters before = comm.counters();
    auto sub = comm.split(comm.rank() % 2, comm.rank());
    EXPECT_EQ(comm.counters().messages_sent, before.messages_sent) << "rank " << comm.rank() << ": split sent";
    EXPECT_EQ(sub->counters().messages_sent + sub->counters().bytes_received, 0u) << "rank " << comm.rank();
    ring_exchange(*sub, 1);  // 1 message of 4 bytes each way
    auto single = sub->split(sub->rank(), 0);
    int value = 0;
    RequestSet requests;
    requests.post(single->irecv(&value, sizeof value, 0, 1));
    requests.post(single->isend(&value, sizeof value, 0, 1));  // to itself
    requests.wait();
    world[comm.rank()] = comm.counters();
    child[comm.rank()] = sub->counters();
    grandchild[comm.rank()] = single->counters();
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(grandchild[r].messages_sent, 1u) << "rank " << r;
    EXPECT_EQ(child[r].messages_sent, 2u) << "rank " << r;
    EXPECT_EQ(child[r].bytes_received, 8u) << "rank " << r;
    EXPECT_EQ(world[r].messages_sent, 2u) << "rank " << r;
    EXPECT_EQ(world[r].bytes_sent, 8u) << "rank " << r;
  }
}

}  // namespace
}  // namespace concord
