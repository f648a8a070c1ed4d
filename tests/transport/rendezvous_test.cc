// The rendezvous of the UCX transport without UCX (src/transport/rendezvous/): the address
// frame refuses truncated, foreign, other-version and corrupt records; the file and TCP
// stores set, get, add and wait across threads and processes' worth of clients; the world
// rendezvous succeeds at 1..5 ranks as threads, and a duplicate rank, a world-size
// disagreement or a missing rank fails on every rank, naming it, within the timeout; an
// unreachable TCP store fails within its timeout; the launch environment is read from
// torchrun's, Slurm's and mpirun's variables.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <thread>

#include "common/enforce.h"
#include "transport/launch_environment.h"
#include "transport/rendezvous/address_frame.h"
#include "transport/rendezvous/file_store.h"
#include "transport/rendezvous/open_store.h"
#include "transport/rendezvous/pmix_exchange.h"
#include "transport/rendezvous/tcp_store.h"
#include "transport/rendezvous/world_rendezvous.h"

namespace concord::rendezvous {
namespace {

using namespace std::chrono_literals;

// A fresh directory under the test's temporary directory, removed at the end.
struct TempDir {
  std::string path;
  TempDir() {
    char pattern[] = "/tmp/concord-rendezvous-test-XXXXXX";
    path = ::mkdtemp(pattern);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const std::exception& error) {
    return error.what();
  }
  return "";
}

TEST(AddressFrame, RoundTripsHostAndAddress) {
  const PeerAddress peer{"node-a", 4194301, {1, 2, 3, 250, 0, 7}};
  const PeerAddress back = unframe_address(frame_address(peer), 3);
  EXPECT_EQ(back.host, peer.host);
  EXPECT_EQ(back.pid, peer.pid);
  EXPECT_EQ(back.address, peer.address);
}

TEST(AddressFrame, RefusesTruncatedForeignOtherVersionAndCorruptRecords) {
  const auto frame = frame_address({"host", 77, std::vector<uint8_t>(40, 9)});
  auto truncated = frame;
  truncated.resize(frame.size() - 1);
  EXPECT_NE(error_of([&] { unframe_address(truncated, 2); }).find("rank 2"), std::string::npos);
  EXPECT_NE(error_of([&] { unframe_address(truncated, 2); }).find("truncated"), std::string::npos);
  EXPECT_NE(error_of([&] { unframe_address({1, 2, 3}, 1); }).find("shorter than"), std::string::npos);
  auto foreign = frame;
  foreign[0] = 'X';
  EXPECT_NE(error_of([&] { unframe_address(foreign, 0); }).find("magic"), std::string::npos);
  auto version = frame;
  version[4] = 9;
  EXPECT_NE(error_of([&] { unframe_address(version, 0); }).find("version 9"), std::string::npos);
  auto corrupt = frame;
  corrupt.back() ^= 1;
  EXPECT_NE(error_of([&] { unframe_address(corrupt, 0); }).find("checksum"), std::string::npos);
}

// set/get/add/wait of one store kind, with `clients` stores opened by make().
void exercise_store(const std::function<std::unique_ptr<Store>()>& make) {
  auto a = make();
  auto b = make();
  EXPECT_FALSE(a->try_get("x/y").has_value());
  a->set("x/y", to_bytes("hello"));
  EXPECT_EQ(to_string(b->get("x/y", Clock::now() + 5s)), "hello");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&make] {
      auto store = make();
      for (int i = 0; i < 25; ++i) store->add("counter", 1);
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(a->add("counter", 0), 100) << "add() lost updates on " << a->describe();
  const std::string message = error_of([&] { b->wait({"x/y", "never"}, Clock::now() + 200ms); });
  EXPECT_NE(message.find("never"), std::string::npos) << message;
  EXPECT_EQ(message.find("x/y"), std::string::npos) << "a key that is set is not missing: " << message;
}

TEST(FileStore, SetGetAddWait) {
  TempDir dir;
  exercise_store([&] { return std::make_unique<FileStore>(dir.path); });
}

TEST(TcpStore, SetGetAddWait) {
  TcpStoreServer server(0);  // a free port the system picks
  exercise_store([&server] { return std::make_unique<TcpStore>("127.0.0.1", server.port(), 5000ms); });
}

TEST(TcpStore, UnreachableStoreFailsWithinItsTimeout) {
  const int port = TcpStoreServer(0).port();  // free a moment ago; nobody serves it now
  TcpStore store("127.0.0.1", port, 300ms);
  const auto start = Clock::now();
  const std::string message = error_of([&] { store.set("k", to_bytes("v")); });
  EXPECT_NE(message.find("did not answer"), std::string::npos) << message;
  EXPECT_LT(Clock::now() - start, 5s);
}

// Runs the rendezvous of `sizes.size()` threads (thread t claims ranks[t] of a world of
// sizes[t]); returns each thread's error ("" = success).
std::vector<std::string> rendezvous_threads(Store& shared, const std::vector<int>& ranks, const std::vector<int>& sizes,
                                            std::chrono::milliseconds timeout) {
  std::vector<std::string> errors(ranks.size());
  std::vector<std::thread> threads;
  const auto deadline = Clock::now() + timeout;
  for (size_t t = 0; t < ranks.size(); ++t)
    threads.emplace_back([&, t] {
      errors[t] = error_of([&] {
        const RendezvousOptions options{ranks[t], sizes[t], "job", deadline};
        const auto peers =
            exchange_addresses(shared, options, {"host" + std::to_string(ranks[t] % 2), ranks[t], {uint8_t(ranks[t])}});
        for (int r = 0; r < sizes[t]; ++r) {
          EXPECT_EQ(peers[r].address, std::vector<uint8_t>{uint8_t(r)}) << "thread " << t << " peer " << r;
          EXPECT_EQ(peers[r].host, "host" + std::to_string(r % 2));
        }
      });
    });
  for (auto& thread : threads) thread.join();
  return errors;
}

TEST(WorldRendezvous, EveryRankGetsEveryAddressAtOneToFiveRanks) {
  for (int size = 1; size <= 5; ++size) {
    TempDir dir;
    FileStore store(dir.path);
    std::vector<int> ranks(size), sizes(size, size);
    for (int r = 0; r < size; ++r) ranks[r] = r;
    for (const auto& error : rendezvous_threads(store, ranks, sizes, 10s)) EXPECT_EQ(error, "") << "size " << size;
  }
}

TEST(WorldRendezvous, DuplicateRankFailsOnEveryRank) {
  TempDir dir;
  FileStore store(dir.path);
  const auto errors = rendezvous_threads(store, {0, 1, 1}, {3, 3, 3}, 10s);
  for (size_t t = 0; t < errors.size(); ++t)
    EXPECT_NE(errors[t].find("rank 1 was claimed by 2"), std::string::npos) << "thread " << t << ": " << errors[t];
}

TEST(WorldRendezvous, WorldSizeDisagreementFailsOnEveryRank) {
  TempDir dir;
  FileStore store(dir.path);
  const auto start = Clock::now();
  const auto errors = rendezvous_threads(store, {0, 1, 2}, {3, 3, 2}, 10s);
  for (size_t t = 0; t < errors.size(); ++t)
    EXPECT_NE(errors[t].find("world size disagreement"), std::string::npos) << "thread " << t << ": " << errors[t];
  EXPECT_LT(Clock::now() - start, 5s) << "the abort key should end the wait before the deadline";
}

TEST(WorldRendezvous, MissingRankFailsAtTheDeadlineNamingIt) {
  TempDir dir;
  FileStore store(dir.path);
  const auto start = Clock::now();
  const auto errors = rendezvous_threads(store, {0, 2}, {3, 3}, 500ms);
  for (size_t t = 0; t < errors.size(); ++t)
    EXPECT_NE(errors[t].find("rank(s) 1 of 3 never arrived"), std::string::npos) << "thread " << t << ": " << errors[t];
  EXPECT_LT(Clock::now() - start, 5s);
}

std::function<std::optional<std::string>(const char*)> lookup(std::map<std::string, std::string> values) {
  return [values](const char* name) -> std::optional<std::string> {
    const auto it = values.find(name);
    return it == values.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

TEST(LaunchEnvironment, ReadsTorchrunSlurmAndMpirun) {
  const auto torchrun = read_launch_environment(lookup({{"RANK", "2"},
                                                        {"WORLD_SIZE", "4"},
                                                        {"LOCAL_RANK", "2"},
                                                        {"LOCAL_WORLD_SIZE", "3"},
                                                        {"MASTER_ADDR", "h"},
                                                        {"MASTER_PORT", "29500"},
                                                        {"TORCHELASTIC_RUN_ID", "none"}}));
  EXPECT_EQ(torchrun.launcher, "torchrun");
  EXPECT_EQ(torchrun.rank, 2);
  EXPECT_EQ(torchrun.size, 4);
  EXPECT_EQ(torchrun.master_port, 29500);
  EXPECT_EQ(torchrun.local_size, 3);
  EXPECT_FALSE(torchrun.mpi_launcher);
  const auto slurm = read_launch_environment(
      lookup({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "0"}, {"SLURM_JOB_ID", "7"}}));
  EXPECT_EQ(slurm.launcher, "slurm");
  EXPECT_EQ(slurm.run_id, "7.0");
  EXPECT_EQ(slurm.local_size, 0);  // Slurm does not say
  const auto mpi = read_launch_environment(lookup({{"OMPI_COMM_WORLD_RANK", "0"},
                                                   {"OMPI_COMM_WORLD_SIZE", "3"},
                                                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"},
                                                   {"RANK", "5"},
                                                   {"WORLD_SIZE", "9"},
                                                   {"LOCAL_WORLD_SIZE", "9"}}));
  EXPECT_EQ(mpi.launcher, "mpirun");
  EXPECT_TRUE(mpi.mpi_launcher);
  EXPECT_EQ(mpi.size, 3);
  EXPECT_EQ(mpi.local_size, 1);
  const auto alone = read_launch_environment(lookup({}));
  EXPECT_FALSE(alone.several());
  EXPECT_NE(error_of([] {
              read_launch_environment(lookup({{"RANK", "4"}, {"WORLD_SIZE", "4"}}));
            }).find("WORLD_SIZE=4"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              read_launch_environment(lookup({{"RANK", "x"}, {"WORLD_SIZE", "4"}}));
            }).find("RANK='x'"),
            std::string::npos);
}

// Under mpirun (PMIX_NAMESPACE and PMIX_RANK set) with CONCORD_STORE empty, the UCX world
// rendezvouses through PMIx in a build with it; an explicit CONCORD_STORE wins; a build
// without PMIx says so instead of naming a store that does not exist.
TEST(OpenStore, PmixUnderMpirunUnlessAStoreIsNamed) {
  const auto mpirun = read_launch_environment(lookup({{"OMPI_COMM_WORLD_RANK", "1"},
                                                      {"OMPI_COMM_WORLD_SIZE", "2"},
                                                      {"PMIX_NAMESPACE", "prterun-x@1"},
                                                      {"PMIX_RANK", "1"}}));
  EXPECT_TRUE(mpirun.pmix);
  EXPECT_FALSE(read_launch_environment(lookup({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}})).pmix);
  EXPECT_EQ(describe_rendezvous(mpirun, "file:/tmp/s"), "file:/tmp/s");
  if (pmix_available()) {
    EXPECT_EQ(describe_rendezvous(mpirun, ""), "pmix");
    const OpenStore opened = open_store(mpirun, "", std::chrono::seconds(1));
    EXPECT_TRUE(opened.pmix);
    EXPECT_EQ(opened.store, nullptr);
    EXPECT_EQ(opened.describe(), "pmix");
  } else {
    EXPECT_NE(describe_rendezvous(mpirun, "").find("this build has no PMIx"), std::string::npos)
        << describe_rendezvous(mpirun, "");
  }
  auto no_pmix = mpirun;
  no_pmix.pmix = false;
  EXPECT_NE(describe_rendezvous(no_pmix, "").find("a launcher with a PMIx server"), std::string::npos)
      << describe_rendezvous(no_pmix, "");
}

}  // namespace
}  // namespace concord::rendezvous
