// The NCCL algorithm (src/algorithms/allreduce_nccl.h) without a GPU: a fake nccl::Api records
// what Concord asks of NCCL, so the parts that need no GPU are checked -- the ncclUniqueId
// made once by rank 0 and broadcast over Concord's control collectives to every rank, one
// ncclCommInitRank per rank (lazily, once per instance), each operation one ncclAllReduce
// with the mapped dtype and op on the instance's stream, ncclCommDestroy on destruction --
// plus the dtype/op mapping and its declines, and the registry entry declining here with
// the reason (no NCCL, or no CUDA GPU). The fake moves no data: NCCL's own arithmetic runs
// only on a GPU (scripts/gpu_check.sh).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <mutex>

#include "algorithms/allreduce_nccl.h"
#include "algorithms/device_capabilities.h"
#include "device/emulated_device.h"
#include "device_cases.h"
#include "rank_runner.h"
#include "test_support/dtype_util.h"

namespace concord {
namespace {

using testing_util::AbortFlag;
using testing_util::all_dtypes;
using testing_util::all_ops;
using testing_util::drive;
using testing_util::run_ranks;

struct Call {
  const void* send;
  void* recv;
  size_t count;
  nccl::Type type;
  nccl::Op op;
  nccl::Comm comm;
  void* stream;
};

// What every rank's fake saw, shared by the ranks of one run.
struct FakeWorld {
  std::mutex mutex;
  int unique_ids = 0;
  std::map<int, std::vector<std::string>> ids_by_rank;  // the id each init_rank got
  std::map<int, int> nranks_by_rank;
  std::map<int, int> ordinal_by_rank;
  std::map<int, std::vector<Call>> calls_by_rank;
  std::map<int, nccl::Comm> destroyed_by_rank;
};

class FakeNccl : public nccl::Api {
 public:
  FakeNccl(FakeWorld& world, int rank) : world_(world), rank_(rank) {}
  int version() override { return 22805; }
  nccl::UniqueId unique_id() override {
    std::lock_guard<std::mutex> lock(world_.mutex);
    nccl::UniqueId id;
    for (size_t i = 0; i < sizeof id.bytes; ++i) id.bytes[i] = static_cast<char>(i * 7 + 3 + world_.unique_ids);
    ++world_.unique_ids;
    return id;
  }
  nccl::Comm init_rank(int nranks, const nccl::UniqueId& id, int rank, int cuda_ordinal) override {
    std::lock_guard<std::mutex> lock(world_.mutex);
    EXPECT_EQ(rank, rank_);
    world_.ids_by_rank[rank].emplace_back(id.bytes, sizeof id.bytes);
    world_.nranks_by_rank[rank] = nranks;
    world_.ordinal_by_rank[rank] = cuda_ordinal;
    return &comm_;
  }
  void all_reduce(const void* send, void* recv, size_t count, nccl::Type type, nccl::Op op, nccl::Comm comm,
                  void* stream) override {
    std::lock_guard<std::mutex> lock(world_.mutex);
    world_.calls_by_rank[rank_].push_back({send, recv, count, type, op, comm, stream});
  }
  void destroy(nccl::Comm comm) noexcept override {
    std::lock_guard<std::mutex> lock(world_.mutex);
    world_.destroyed_by_rank[rank_] = comm;
  }
  nccl::Comm comm() { return &comm_; }

 private:
  FakeWorld& world_;
  int rank_;
  int comm_ = 0;  // its address is this rank's ncclComm_t
};

TEST(AllreduceNccl, UniqueIdBroadcastLazyCommAndStreamOrderedCalls) {
  const int P = 5;
  FakeWorld world;
  std::map<int, nccl::Comm> comm_of;
  std::map<int, std::pair<void*, void*>> buffers_of;
  const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag& aborted) {
    const int r = comm.rank();
    EmulatedDevice device;
    FakeNccl fake(world, r);
    DeviceBuffer a(device, 4000), b(device, 4000);
    {
      AllreduceNccl algorithm(comm, device, fake);
      EXPECT_EQ(algorithm.nccl_comm(), nullptr) << "created before the first start";
      algorithm.start(a.data(), 1000, DataType::kFloat32, ReduceOp::kAverage);
      drive(algorithm, aborted);
      algorithm.start_out_of_place(a.data(), b.data(), 999, DataType::kBFloat16, ReduceOp::kProduct);
      drive(algorithm, aborted);
      algorithm.start(a.data(), 0, DataType::kInt64, ReduceOp::kMin);  // nothing to reduce: no NCCL call
      drive(algorithm, aborted);
      EXPECT_THROW(algorithm.start(a.data(), 10, DataType::kBool, ReduceOp::kSum), InvalidArgument);
      std::lock_guard<std::mutex> lock(world.mutex);
      comm_of[r] = algorithm.nccl_comm();
      buffers_of[r] = {a.data(), b.data()};
    }
  });
  ASSERT_EQ(error, "");
  EXPECT_EQ(world.unique_ids, 1) << "ncclGetUniqueId must run once, on rank 0";
  const std::string& rank0_id = world.ids_by_rank.at(0).at(0);
  for (int r = 0; r < P; ++r) {
    ASSERT_EQ(world.ids_by_rank[r].size(), 1u) << "rank " << r << ": one ncclCommInitRank per instance";
    EXPECT_EQ(world.ids_by_rank[r][0], rank0_id) << "rank " << r << " got another unique id";
    EXPECT_EQ(world.nranks_by_rank[r], P) << "rank " << r;
    EXPECT_EQ(world.ordinal_by_rank[r], -1) << "rank " << r << ": the emulated device has no CUDA ordinal";
    const auto& calls = world.calls_by_rank[r];
    ASSERT_EQ(calls.size(), 2u) << "rank " << r;
    const auto [a, b] = buffers_of[r];
    EXPECT_EQ(calls[0].send, a);
    EXPECT_EQ(calls[0].recv, a);
    EXPECT_EQ(calls[0].count, 1000u);
    EXPECT_EQ(calls[0].type, nccl::Type::kFloat32);
    EXPECT_EQ(calls[0].op, nccl::Op::kSum) << "average reduces as sum; the caller scales";
    EXPECT_EQ(calls[1].send, a);
    EXPECT_EQ(calls[1].recv, b);
    EXPECT_EQ(calls[1].count, 999u);
    EXPECT_EQ(calls[1].type, nccl::Type::kBfloat16);
    EXPECT_EQ(calls[1].op, nccl::Op::kProd);
    for (const Call& call : calls) {
      EXPECT_EQ(call.comm, comm_of[r]);
      EXPECT_EQ(call.stream, nullptr) << "the emulated stream has no cudaStream_t";
    }
    EXPECT_EQ(world.destroyed_by_rank[r], comm_of[r]) << "rank " << r << ": ncclCommDestroy on destruction";
  }
}

TEST(NcclMapping, TypesOpsAndDeclines) {
  const std::map<DataType, nccl::Type> types = {
      {DataType::kFloat32, nccl::Type::kFloat32}, {DataType::kFloat64, nccl::Type::kFloat64},
      {DataType::kFloat16, nccl::Type::kFloat16}, {DataType::kBFloat16, nccl::Type::kBfloat16},
      {DataType::kInt32, nccl::Type::kInt32},     {DataType::kInt64, nccl::Type::kInt64},
      {DataType::kInt8, nccl::Type::kInt8},       {DataType::kUInt8, nccl::Type::kUint8}};
  for (DataType dtype : all_dtypes()) {
    if (types.count(dtype)) {
      EXPECT_EQ(nccl::type_of(dtype), types.at(dtype)) << dtype_name(dtype);
      EXPECT_EQ(nccl::declines(dtype, ReduceOp::kSum), "") << dtype_name(dtype);
    } else {
      EXPECT_THROW(nccl::type_of(dtype), InvalidArgument) << dtype_name(dtype);
      EXPECT_NE(nccl::declines(dtype, ReduceOp::kSum), "") << dtype_name(dtype);
    }
  }
  EXPECT_EQ(nccl::declines(DataType::kBool, ReduceOp::kMax),
            "bool is not reduced (NCCL has no bool type; Concord refuses bool reductions)");
  EXPECT_EQ(nccl::declines(DataType::kInt16, ReduceOp::kSum), "NCCL has no int16 type");
  EXPECT_EQ(nccl::op_of(ReduceOp::kSum), nccl::Op::kSum);
  EXPECT_EQ(nccl::op_of(ReduceOp::kAverage), nccl::Op::kSum);
  EXPECT_EQ(nccl::op_of(ReduceOp::kProduct), nccl::Op::kProd);
  EXPECT_EQ(nccl::op_of(ReduceOp::kMin), nccl::Op::kMin);
  EXPECT_EQ(nccl::op_of(ReduceOp::kMax), nccl::Op::kMax);
  EXPECT_THROW(nccl::op_of(ReduceOp::kAdasum), InvalidArgument);
  EXPECT_EQ(nccl::declines(DataType::kFloat32, ReduceOp::kAdasum), "adasum is not element-wise");
  EXPECT_NE(nccl::declines(DataType::kFloat16, ReduceOp::kMin).find("NaN"), std::string::npos);
  EXPECT_EQ(nccl::declines(DataType::kInt32, ReduceOp::kMin), "");
  for (ReduceOp op : all_ops()) EXPECT_EQ(nccl::declines(DataType::kInt64, op), "") << reduce_op_name(op);
}

// nccl::library() either loads libnccl (every symbol bound, a version) or says why not;
// loading needs no GPU. Status::summary() spells the version as NCCL does.
TEST(NcclLibrary, LoadsOrSaysWhy) {
  nccl::Status status;
  nccl::Api* api = nccl::library(&status);
  EXPECT_EQ(api != nullptr, status.loaded);
  if (!status.built) {
    EXPECT_EQ(status.summary(), "NCCL: not built");
  } else if (!status.loaded) {
    EXPECT_FALSE(status.reason.empty());
  } else {
    EXPECT_GE(status.version, 20000) << status.summary();
    EXPECT_EQ(api->version(), status.version);
  }
  nccl::Status example{true, true, 22809, "libnccl.so.2"};
  EXPECT_EQ(example.summary(), "NCCL: 2.28.9 (libnccl.so.2)");
  example.loaded = false;
  example.reason = "libnccl.so.2: cannot open shared object file";
  EXPECT_EQ(example.summary(), "NCCL: built, not loaded (libnccl.so.2: cannot open shared object file)");
}

// An emulated device that claims to be CUDA GPU `id` (ordinal 0), so the capability
// agreement's NCCL checks run without a GPU.
class PretendGpu : public EmulatedDevice {
 public:
  explicit PretendGpu(std::string id) : id_(std::move(id)) {}
  int cuda_ordinal() const override { return 0; }
  std::string hardware_id() const override { return id_; }

 private:
  std::string id_;
};

// NCCL is refused, on every rank and naming the ranks, when two ranks share a GPU
// (hardware ids, not ordinals: CUDA_VISIBLE_DEVICES gives every rank ordinal 0).
TEST(NcclCapabilities, OneGpuPerRank) {
  nccl::Status status;
  if (nccl::library(&status) == nullptr) GTEST_SKIP() << status.summary();
  for (const bool shared : {false, true}) {
    const std::string error = run_ranks(3, [&](Communicator& comm, const AbortFlag&) {
      const int r = comm.rank();
      PretendGpu device("host/0000:0" + std::to_string(shared && r == 2 ? 1 : r) + ":00.0");
      const DeviceCapabilities caps = agree_device_capabilities(comm, device);
      if (shared) {
        EXPECT_FALSE(caps.nccl.available) << "rank " << r;
        EXPECT_EQ(caps.nccl.reason, "NCCL needs one GPU per rank: ranks 1 and 2 share host/0000:01:00.0") << r;
      } else {
        EXPECT_TRUE(caps.nccl.available) << "rank " << r << ": " << caps.nccl.reason;
        EXPECT_EQ(caps.nccl.reason, status.summary());
      }
    });
    EXPECT_EQ(error, "") << (shared ? "shared" : "distinct");
  }
}

// Here (no GPU; NCCL built or not) the registry's "nccl" entry declines with the reason.
TEST(DeviceRegistry, NcclDeclinesWithoutACudaDevice) {
  const std::string error = run_ranks(2, [&](Communicator& comm, const AbortFlag&) {
    EmulatedDevice device;
    testing_util::DeviceProblem problem{Problem{}, agree_device_capabilities(comm, device)};
    problem.problem.ranks = 2;
    problem.problem.count = 1 << 20;
    EXPECT_FALSE(problem.caps.nccl.available);
    const AllreduceEntry& nccl_entry = testing_util::allreduce_row("nccl");
    const std::string reason = nccl_entry.declines(problem.get());
    EXPECT_EQ(reason.rfind("NCCL unavailable: ", 0), 0u) << reason;
    nccl::Status status;
    nccl::library(&status);
    if (status.loaded) {
      EXPECT_NE(reason.find("not a CUDA GPU"), std::string::npos) << reason;
    } else {
      EXPECT_NE(reason.find("NCCL: "), std::string::npos) << reason;
    }
    EXPECT_NE(testing_util::select_device(problem, CostParams{}, StagingParams{}, "nccl").name, "nccl");
  });
  EXPECT_EQ(error, "");
}

}  // namespace
}  // namespace concord
