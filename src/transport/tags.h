// Every message tag Concord uses, in one place (the layout gloo's `types.h` slot prefixes
// and UCC's `tl_ucp_tag.h` document). Tags only need to differ between operations that can
// be in flight on the same communicator at once; messages between one pair with one tag
// are matched in the order they were sent (MPI's non-overtaking rule), so an algorithm
// reuses its tag across calls. Layout:
//   1 .. 89           dense collectives (src/algorithms), one tag or tag pair per algorithm
//   90 .. 99          the KVStore's key check (src/kvstore/key_check.h, key_digest.h)
//   0x3A4E            the negotiator's wake messages (src/control/wake_channel.h)
//   0x3A50            the members' agreement of a group formed by its members alone
//                     (TransportWorld::create_group, UCX transport)
//   0x5300 .. 0x53ff  sparse collectives (src/sparse)
//   1 << 29           the control collectives over point-to-point (in-process and UCX
//                     transports, p2p_control.h; never seen by MPI)
// A new algorithm takes the next free value of its range here; tests/unit/test_tags.cc
// checks that no two tags are equal and that each lies in its range.
#pragma once

#include <array>

namespace concord::tags {

// Dense collectives (src/algorithms).
inline constexpr int kAllreduceRing = 1;
inline constexpr int kAllgatherRing = 2;
inline constexpr int kBroadcastBinomial = 3;
inline constexpr int kAllreduceHalvingDoubling = 11;
inline constexpr int kAllreduceRecursiveDoubling = 12;
inline constexpr int kReduceScatterRing = 13;
inline constexpr int kReduceScatterHalving = 14;
inline constexpr int kAllgatherRecursiveDoubling = 15;
inline constexpr int kReduceBinomial = 21;  // the reduce phase of the hierarchical allreduce
inline constexpr int kTreeUp = 40;
inline constexpr int kTreeDown = 41;
inline constexpr int kDoubleTreeUp[2] = {42, 44};
inline constexpr int kDoubleTreeDown[2] = {43, 45};
inline constexpr int kBroadcastChain = 46;
inline constexpr int kAlltoallPairwise = 47;
inline constexpr int kAdasumData = 60;
inline constexpr int kAdasumDot = 61;
inline constexpr int kOverlappedTreeUp[2] = {70, 72};
inline constexpr int kOverlappedTreeDown[2] = {71, 73};

// The KVStore's per-collective key check (src/kvstore/key_check.h).
inline constexpr int kKeyCheckHeader = 90;
inline constexpr int kKeyCheckVerdict = 91;
inline constexpr int kKeyDigest = 92;  // the decentralised fast path (src/kvstore/key_digest.h)

// Round announcements to idle ranks on the control communicator (src/control/wake_channel.h).
inline constexpr int kWake = 0x3A4E;

// A group formed by its members alone agreeing on its communicator id, on the UCX world
// communicator (TransportWorld::create_group in src/transport/ucx/ucx_world.cc).
inline constexpr int kGroupFormation = 0x3A50;

// Sparse collectives (src/sparse).
inline constexpr int kSparseCountExchange = 0x5301;
inline constexpr int kSparseRotation = 0x5302;
inline constexpr int kSparseBalance = 0x5303;
inline constexpr int kSparseTreeReduce = 0x5311;

// The control collectives over point-to-point, and + 1 (src/transport/p2p_control.h).
inline constexpr int kInProcessControl = 1 << 29;

/// Every tag above, for the uniqueness test.
inline constexpr std::array kAll = {kAllreduceRing,
                                    kAllgatherRing,
                                    kBroadcastBinomial,
                                    kAllreduceHalvingDoubling,
                                    kAllreduceRecursiveDoubling,
                                    kReduceScatterRing,
                                    kReduceScatterHalving,
                                    kAllgatherRecursiveDoubling,
                                    kReduceBinomial,
                                    kTreeUp,
                                    kTreeDown,
                                    kDoubleTreeUp[0],
                                    kDoubleTreeUp[1],
                                    kDoubleTreeDown[0],
                                    kDoubleTreeDown[1],
                                    kBroadcastChain,
                                    kAlltoallPairwise,
                                    kAdasumData,
                                    kAdasumDot,
                                    kOverlappedTreeUp[0],
                                    kOverlappedTreeUp[1],
                                    kOverlappedTreeDown[0],
                                    kOverlappedTreeDown[1],
                                    kKeyCheckHeader,
                                    kKeyCheckVerdict,
                                    kKeyDigest,
                                    kWake,
                                    kGroupFormation,
                                    kSparseCountExchange,
                                    kSparseRotation,
                                    kSparseBalance,
                                    kSparseTreeReduce,
                                    kInProcessControl};

}  // namespace concord::tags
