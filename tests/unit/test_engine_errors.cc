// Dependency engine (src/engine/engine.h, docs/architecture.md): the error
// rules. An error is stored on the failed operation's written vars, inherited by skipped
// dependents (or handed to their on_skip), and rethrown once by wait_for_var()/wait_all();
// misuse (a var listed twice, waits from inside an operation, vars of another engine) is
// refused with an error naming the operation.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <exception>
#include <latch>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "concord/errors.h"

namespace concord::engine {
namespace {
TEST(Engine, ErrorsPropagateSkipDependentsAndAreRethrownOnce) {
  Engine engine(2, 1);
  Var* a = engine.new_var();
  Var* b = engine.new_var();
  Var* c = engine.new_var();
  std::atomic<bool> dependent_ran{false}, independent_ran{false};
  engine.push_sync([] { throw std::runtime_error("boom in producer"); }, {}, {a}, {FnKind::kCpu, 0, "producer"});
  engine.push_sync([&] { dependent_ran = true; }, {a}, {b}, {FnKind::kCpu, 0, "consumer"});
  engine.push_sync([&] { independent_ran = true; }, {}, {c}, {FnKind::kCpu, 0, "independent"});
  try {
    engine.wait_for_var(b);
    FAIL() << "wait_for_var(b) must rethrow the error b inherited from a";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "boom in producer");
  }
  EXPECT_FALSE(dependent_ran.load()) << "an operation reading a failed var must be skipped";
  EXPECT_NO_THROW(engine.wait_for_var(b)) << "the error must be cleared by the first rethrow";
  EXPECT_NO_THROW(engine.wait_for_var(c));
  EXPECT_TRUE(independent_ran.load());
  EXPECT_EQ(engine.version(b), 1u) << "a skipped write still completes (and counts)";
  EXPECT_THROW(engine.wait_for_var(a), std::runtime_error);
  // Cleared: new work on a and b runs again.
  engine.push_sync([&] { dependent_ran = true; }, {a}, {b});
  EXPECT_NO_THROW(engine.wait_for_var(b));
  EXPECT_TRUE(dependent_ran.load());
}

// PushOptions::on_skip: an operation that would be skipped runs the callback with the
// inherited error (on its pool, with its vars held) instead of its function; what the
// callback completes with is stored on the writes, and the inherited error stays where it
// was. Without on_skip the same dependents are skipped as before.
TEST(Engine, OnSkipRunsWithTheInheritedErrorInsteadOfSkipping) {
  Engine engine(2, 1);
  Var* grad = engine.new_var();
  Var* clean = engine.new_var();
  Var* flagged = engine.new_var();
  std::atomic<bool> fn_ran{false};
  std::string seen;  // written by on_skip, read after the waits
  engine.push_sync([] { throw std::runtime_error("gradient exploded"); }, {}, {grad}, {FnKind::kCpu, 0, "grad"});
  // 1. on_skip completes with nullptr: nothing is stored on its write.
  PushOptions quiet{FnKind::kComm, 0, "collective"};
  quiet.on_skip = [&](std::exception_ptr inherited, OnComplete done) {
    try {
      std::rethrow_exception(inherited);
    } catch (const std::runtime_error& e) {
      seen = e.what();
    }
    done(nullptr);
  };
  engine.push_async(
      [&](OnComplete done) {
        fn_ran = true;
        done(nullptr);
      },
      {grad}, {clean}, quiet);
  // 2. on_skip completes with its own error: stored on its write.
  PushOptions loud{FnKind::kCpu, 0, "reporter"};
  loud.on_skip = [](std::exception_ptr, OnComplete done) {
    done(std::make_exception_ptr(StateError("reported by on_skip")));
  };
  engine.push_sync([&] { fn_ran = true; }, {grad}, {flagged}, loud);
  EXPECT_NO_THROW(engine.wait_for_var(clean)) << "on_skip completed with nullptr: no error on its write";
  EXPECT_EQ(seen, "gradient exploded") << "on_skip must receive the inherited error";
  EXPECT_EQ(engine.version(clean), 1u);
  try {
    engine.wait_for_var(flagged);
    FAIL() << "the error on_skip completed with must be stored on the write";
  } catch (const StateError& e) {
    EXPECT_NE(std::string(e.what()).find("reported by on_skip"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fn_ran.load()) << "the operation's own function must not run when it is skipped";
  EXPECT_THROW(engine.wait_for_var(grad), std::runtime_error) << "the inherited error stays on its var";
  // 3. Later operations on `clean` run (nothing was stored there), and with the error
  // cleared the operation with on_skip runs its own function again.
  engine.push_async(
      [&](OnComplete done) {
        fn_ran = true;
        done(nullptr);
      },
      {grad}, {clean}, quiet);
  EXPECT_NO_THROW(engine.wait_for_var(clean));
  EXPECT_TRUE(fn_ran.load()) << "with no error on its vars the function runs, not on_skip";
  // 4. A throw from on_skip is the operation's error.
  engine.push_sync([] { throw std::runtime_error("again"); }, {}, {grad});
  PushOptions thrower{FnKind::kCpu, 0, "thrower"};
  thrower.on_skip = [](std::exception_ptr, OnComplete) { throw CommError("thrown by on_skip"); };
  engine.push_sync([] {}, {grad}, {flagged}, thrower);
  EXPECT_THROW(engine.wait_for_var(flagged), CommError);
  EXPECT_THROW(engine.wait_for_var(grad), std::runtime_error);
  EXPECT_NO_THROW(engine.wait_all());
}

TEST(Engine, WaitAllRethrowsTheFirstErrorThenClearsAll) {
  Engine engine(1, 1);
  Var* a = engine.new_var();
  Var* b = engine.new_var();
  std::latch first_done(1);
  engine.push_sync(
      [&] {
        first_done.count_down();
        throw InvalidArgument("first");
      },
      {}, {a});
  engine.push_sync(
      [&] {
        first_done.wait();
        throw StateError("second");
      },
      {}, {b});
  engine.push_sync([] { throw CommError("read-only op"); }, {a}, {});  // skipped: inherits "first"
  try {
    engine.wait_all();
    FAIL() << "wait_all() must rethrow";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("first"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(engine.wait_all());
  EXPECT_NO_THROW(engine.wait_for_var(a));
  EXPECT_NO_THROW(engine.wait_for_var(b)) << "wait_all() clears the errors of every var";
  // A read-only operation skipped for a failed var does not copy the error: once the var's
  // waiter has seen it, wait_all() has nothing left.
  engine.push_sync([] { throw CommError("again"); }, {}, {a});
  engine.push_sync([] {}, {a}, {});
  EXPECT_THROW(engine.wait_for_var(a), CommError);
  EXPECT_NO_THROW(engine.wait_all());
  // A read-only operation's own error reaches wait_all().
  engine.push_sync([] { throw CommError("read-only op"); }, {a}, {});
  EXPECT_THROW(engine.wait_all(), CommError);
  EXPECT_NO_THROW(engine.wait_all());
}

TEST(Engine, DuplicateVarIsRejectedNamingTheOperation) {
  Engine engine(1, 1);
  Var* a = engine.new_var();
  Var* b = engine.new_var();
  for (const auto& [reads, writes] :
       std::vector<std::pair<std::vector<Var*>, std::vector<Var*>>>{{{a, a}, {}}, {{}, {b, b}}, {{a}, {a}}}) {
    try {
      engine.push_sync([] {}, reads, writes, {FnKind::kCpu, 0, "gradient_of_layer_7"});
      FAIL() << "a duplicate var must be rejected";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("gradient_of_layer_7"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(engine.push_sync([] {}, {nullptr}, {}), InvalidArgument);
  EXPECT_THROW(engine.push_sync(SyncFn{}, {}, {a}), InvalidArgument);
  EXPECT_THROW(engine.push_async(AsyncFn{}, {}, {a}), InvalidArgument);
  EXPECT_THROW(Engine(0, 1), InvalidArgument);
  EXPECT_THROW(Engine(1, 0), InvalidArgument);
  engine.wait_all();
  EXPECT_EQ(engine.version(a), 0u);
}

// Waiting on (or shutting down) the engine from one of its own operations would wait for
// itself: it is refused with StateError, which becomes the operation's error. Vars of
// another engine are refused at push.
TEST(Engine, SelfWaitsAndForeignVarsAreRefused) {
  Engine engine(2, 1);
  Engine other(1, 1);
  Var* v = engine.new_var();
  Var* foreign = other.new_var();
  engine.push_sync([&] { engine.wait_all(); }, {}, {v}, {FnKind::kCpu, 0, "waits on its engine"});
  EXPECT_THROW(engine.wait_for_var(v), StateError);
  engine.push_sync([&] { engine.wait_for_var(v); }, {}, {v});
  EXPECT_THROW(engine.wait_for_var(v), StateError);
  engine.push_sync([&] { engine.shutdown(); }, {}, {v});
  EXPECT_THROW(engine.wait_for_var(v), StateError);
  // Waiting on another engine from inside an operation is allowed.
  std::atomic<bool> waited{false};
  other.push_sync([] {}, {}, {foreign});
  engine.push_sync(
      [&] {
        other.wait_for_var(foreign);
        waited = true;
      },
      {}, {v});
  EXPECT_NO_THROW(engine.wait_for_var(v));
  EXPECT_TRUE(waited.load());
  EXPECT_THROW(engine.push_sync([] {}, {foreign}, {}), InvalidArgument);
  EXPECT_THROW(engine.wait_for_var(foreign), InvalidArgument);
  EXPECT_THROW(engine.version(foreign), InvalidArgument);
}

// ---- Asynchronous operations ----

}  // namespace
}  // namespace concord::engine
