// Entry point of the multi-rank suite: runs under `mpirun -np N concord_mpi_tests`.
//
// concord::init() runs once before RUN_ALL_TESTS and concord::shutdown() once after;
// every rank runs every test in the same order. Rank 0 prints gtest's usual report; the
// other ranks print only their failures, each line prefixed with "[rank r]", so the output
// of N ranks stays readable. The exit status is non-zero on a rank with a failure, which
// makes mpirun fail.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "concord/concord.h"
#include "pre_init.h"

namespace {

using concord::mpitest::PreInitObservation;

class RankFailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}

  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::printf("[rank %d] %s:%d: Failure\n", rank_, result.file_name() ? result.file_name() : "?",
                result.line_number());
    // Prefix every line of the message, so interleaved output still says whose it is.
    std::string message = result.message();
    size_t start = 0;
    while (start <= message.size()) {
      const size_t end = message.find('\n', start);
      const std::string line = message.substr(start, end == std::string::npos ? std::string::npos : end - start);
      std::printf("[rank %d] %s\n", rank_, line.c_str());
      if (end == std::string::npos) break;
      start = end + 1;
    }
    std::fflush(stdout);
  }

  void OnTestEnd(const testing::TestInfo& info) override {
    if (!info.result()->Failed()) return;
    std::printf("[rank %d] [  FAILED  ] %s.%s\n", rank_, info.test_suite_name(), info.name());
    std::fflush(stdout);
  }

  void OnTestProgramEnd(const testing::UnitTest& unit) override {
    if (unit.failed_test_count() == 0) return;
    std::printf("[rank %d] %d FAILED TEST%s\n", rank_, unit.failed_test_count(),
                unit.failed_test_count() == 1 ? "" : "S");
    std::fflush(stdout);
  }

 private:
  int rank_;
};

// Before init(): the runtime must refuse every call with StateError. Checked by the
// Lifecycle.CallsBeforeInitThrowStateError test.
PreInitObservation observe_before_init() {
  PreInitObservation seen;
  seen.initialized = concord::is_initialized();
  auto state_error = [](auto&& call) -> std::string {
    try {
      call();
    } catch (const concord::StateError& e) {
      return "";
    } catch (const std::exception& e) {
      return std::string("threw the wrong error: ") + e.what();
    }
    return "did not throw";
  };
  float x = 1;
  const concord::TensorView view{&x, concord::DataType::kFloat32, {1}};
  seen.rank = state_error([] { (void)concord::rank(); });
  seen.size = state_error([] { (void)concord::size(); });
  seen.allreduce = state_error([&] { (void)concord::allreduce_async("pre.init", view, view); });
  seen.allgather = state_error([&] { (void)concord::allgather_async("pre.init", view); });
  seen.broadcast = state_error([&] { (void)concord::broadcast_async("pre.init", view); });
  concord::shutdown();  // a no-op before init(); must not throw
  return seen;
}

}  // namespace

namespace concord::mpitest {
PreInitObservation& pre_init_observation() {
  static PreInitObservation observation;
  return observation;
}
}  // namespace concord::mpitest

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  concord::mpitest::pre_init_observation() = observe_before_init();
  // Device 0 is the strict emulated device (device_test.cc) unless the caller chose another.
  setenv("CONCORD_DEVICE", "emulated", /*overwrite=*/0);
  try {
    concord::init();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "concord::init() failed: %s\n", e.what());
    return 1;
  }
  const int rank = concord::rank();
  if (rank != 0) {
    testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  const int result = RUN_ALL_TESTS();
  concord::shutdown();
  return result;
}
