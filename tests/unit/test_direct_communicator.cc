// DirectCommunicator (src/transport/direct_communicator.h): the in-process CUDA-aware
// transport. Ranks share one strict emulated device; every cuda_aware row of the registry
// (the ring, the trees, halving-doubling, recursive doubling on device memory) runs over
// it with every message copied device-to-device by the receiver's stream from the sender's
// buffer (no host staging), and must equal its host algorithm on host memory bit for bit; a size mismatch is a CommError naming the peer. Both device-pointer
// decorators split like any communicator (transport/forwarding_communicator.h).
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "algorithms/allreduce_device.h"
#include "algorithms/device_capabilities.h"
#include "allreduce_check.h"
#include "device/emulated_device.h"
#include "device_cases.h"
#include "transport/direct_communicator.h"
#include "transport/request_set.h"
#include "transport/staging_communicator.h"

namespace concord {
namespace {

using testing_util::AbortFlag;
using testing_util::cat;
using testing_util::drive;
using testing_util::fill_input;
using testing_util::first_difference;
using testing_util::run_ranks;

// Every cuda_aware row (the ring's and each other host algorithm's) over the in-process
// CUDA-aware transport equals its host algorithm bit for bit. Over DirectCommunicator a send
// completes only once the peer's receive has progressed, so an algorithm that stopped
// polling its receives while waiting for a send (recursive doubling's whole-vector
// exchange) would hang here.
TEST(DirectCommunicator, CudaAwareRowsEqualTheirHostAlgorithms) {
  for (const char* host_name : {"ring", "tree", "double_tree", "overlapped_tree", "overlapped_double_tree",
                                "halving_doubling", "recursive_doubling"}) {
    const std::string row = device_row_name(host_name, DeviceTransport::kCudaAware);
    for (int P : {1, 2, 3, 5, 8}) {
      for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kInt64}) {
        for (size_t n : {size_t{0}, size_t{1}, size_t{4099}}) {
          const size_t bytes = n * dtype_size(dtype), chunk = 600;
          const std::string what = cat(row, " over DirectCommunicator P=", P, " n=", n, " ", dtype_name(dtype));
          std::vector<std::vector<uint8_t>> inputs(P), results(P, std::vector<uint8_t>(bytes)), host(P);
          for (int r = 0; r < P; ++r) {
            inputs[r].resize(bytes);
            fill_input(inputs[r].data(), n, dtype, ReduceOp::kSum, r);
            host[r] = inputs[r];
          }
          EmulatedDevice device;  // one device for every rank, as ranks on the GPUs of one process
          const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag& aborted) {
            const int r = comm.rank();
            DirectCommunicator direct(comm, device);
            testing_util::DeviceProblem problem{Problem{}, agree_device_capabilities(direct, device)};
            problem.problem.ranks = P;
            problem.problem.count = n;
            if (const std::string reason = problem.caps.transport.reason; !problem.caps.transport.supported) {
              throw std::runtime_error("device pointers not supported: " + reason);
            }
            ScratchBuffer scratch;
            AlgorithmContext ctx{direct, scratch, chunk, {}};
            ctx.device = &device;
            const auto& entry = testing_util::select_device(problem, CostParams{}, StagingParams{}, row);
            if (entry.name != row) throw std::runtime_error("selected " + entry.name);
            auto algorithm = entry.create(ctx);
            auto stream = device.create_stream();
            DeviceBuffer buffer(device, bytes);
            stream->copy(buffer.data(), inputs[r].data(), bytes, CopyKind::kHostToDevice);
            stream->synchronize();
            algorithm->start(buffer.data(), n, dtype, ReduceOp::kSum);
            drive(*algorithm, aborted);
            stream->copy(results[r].data(), buffer.data(), bytes, CopyKind::kDeviceToHost);
            stream->synchronize();
            comm.barrier();  // peers may still read this rank's buffer until their copies are done
            AlgorithmContext host_ctx{comm, scratch, chunk, {}};
            auto reference = testing_util::allreduce_row(host_name).create(host_ctx);
            reference->start(host[r].data(), n, dtype, ReduceOp::kSum);
            drive(*reference, aborted);
          });
          ASSERT_EQ(error, "") << what;
          for (int r = 0; r < P; ++r) {
            const long diff = first_difference(results[r], host[r], dtype_size(dtype));
            EXPECT_EQ(diff, -1) << "rank " << r << " element " << diff << " differs from '" << host_name
                                << "' on host memory (" << what << ")";
          }
          testing_util::expect_allreduce_results(inputs, results, n, dtype, ReduceOp::kSum, what);
        }
      }
    }
  }
}

TEST(DirectCommunicator, SizeMismatchIsACommErrorNamingThePeer) {
  EmulatedDevice device;
  const std::string error = run_ranks(2, [&](Communicator& comm, const AbortFlag& aborted) {
    DirectCommunicator direct(comm, device);
    DeviceBuffer buffer(device, 64);
    if (comm.rank() == 0) {
      RequestPtr send = direct.isend(buffer.data(), 64, 1, 7);
      comm.barrier();  // rank 1 has failed by now; the send never completes
      return;
    }
    RequestPtr receive = direct.irecv(buffer.data(), 32, 0, 7);
    Backoff backoff;
    try {
      while (!receive->test()) {
        if (aborted.load()) return;
        backoff.wait();
      }
      ADD_FAILURE() << "a 64-byte message completed a 32-byte receive";
    } catch (const CommError& e) {
      EXPECT_EQ(std::string(e.what()).find("device-direct receive from rank 0: 64 bytes sent, 32 expected") !=
                    std::string::npos,
                true)
          << e.what();
    }
    comm.barrier();
  });
  EXPECT_EQ(error, "");
}

// split() of a decorator splits the wrapped communicator and wraps the child: in each half
// (even and odd ranks of 4) the lower rank sends a device buffer to the upper one, which
// must receive it in device memory; the child's traffic is credited to the parent.
template <typename Decorator>
void expect_split_carries_device_messages(const char* decorator) {
  EmulatedDevice device;  // shared: DirectCommunicator copies between the ranks' buffers
  const std::string error = run_ranks(4, [&](Communicator& comm, const AbortFlag& aborted) {
    Decorator wrapped(comm, device);
    std::unique_ptr<Communicator> half = wrapped.split(comm.rank() % 2, comm.rank());
    if (half == nullptr || half->size() != 2) throw std::runtime_error("split did not give a group of 2");
    if (dynamic_cast<Decorator*>(half.get()) == nullptr) throw std::runtime_error("the child is not wrapped");
    const size_t bytes = 1000;
    std::vector<uint8_t> host(bytes);
    for (size_t i = 0; i < bytes; ++i) host[i] = static_cast<uint8_t>(comm.rank() * 31 + i);
    DeviceBuffer buffer(device, bytes);
    auto stream = device.create_stream();
    stream->copy(buffer.data(), host.data(), bytes, CopyKind::kHostToDevice);
    stream->synchronize();
    RequestPtr request =
        half->rank() == 0 ? half->isend(buffer.data(), bytes, 1, 5) : half->irecv(buffer.data(), bytes, 0, 5);
    while (!reap_one(request)) {
      if (aborted.load()) throw std::runtime_error("stopped: another rank failed");
      std::this_thread::yield();
    }
    half->barrier();  // DirectCommunicator: the receiver's copy from the sender's buffer is done
    if (half->rank() == 1) {
      stream->copy(host.data(), buffer.data(), bytes, CopyKind::kDeviceToHost);
      stream->synchronize();
      for (size_t i = 0; i < bytes; ++i) {
        const auto expected = static_cast<uint8_t>((comm.rank() - 2) * 31 + i);
        if (host[i] != expected) {
          throw std::runtime_error(cat("rank ", comm.rank(), " byte ", i, ": ", int{host[i]}, " != ", int{expected}));
        }
      }
    }
    const TrafficCounters& counters = wrapped.counters();
    const uint64_t moved = half->rank() == 0 ? counters.bytes_sent : counters.bytes_received;
    if (moved != bytes) throw std::runtime_error(cat("parent counters show ", moved, " bytes, not ", bytes));
  });
  EXPECT_EQ(error, "") << decorator;
}

TEST(DirectCommunicator, SplitWrapsTheChild) { expect_split_carries_device_messages<DirectCommunicator>("direct"); }

TEST(StagingCommunicator, SplitWrapsTheChild) { expect_split_carries_device_messages<StagingCommunicator>("staging"); }

}  // namespace
}  // namespace concord
