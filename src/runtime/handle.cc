#include "concord/handle.h"
#include "common/enforce.h"
#include "runtime/handle_state.h"

namespace concord {

void HandleState::complete() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  done_cv_.notify_all();
}

void HandleState::fail(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = std::move(error);
    done_ = true;
  }
  done_cv_.notify_all();
}

bool HandleState::done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

void HandleState::wait() const {
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [this] { return done_; });
  if (error_) std::rethrow_exception(error_);
}

namespace {
const HandleState& checked(const std::shared_ptr<HandleState>& state) {
  CONCORD_ENFORCE(state != nullptr, InvalidArgument, "empty Handle (default-constructed)");
  return *state;
}
}  // namespace

bool Handle::poll() const { return checked(state_).done(); }

void Handle::wait() const { checked(state_).wait(); }

const std::vector<int64_t>& Handle::output_shape() const { return checked(state_).output_shape; }

const std::vector<uint8_t>& Handle::output_bytes() const { return checked(state_).output_bytes; }

const std::vector<int64_t>& Handle::received_splits() const { return checked(state_).received_splits; }

}  // namespace concord
