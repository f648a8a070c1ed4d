#include "concord/handle.h"

#include <chrono>
#include <cstring>

#include "common/enforce.h"
#include "runtime/flush_signal.h"
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

void HandleState::wait() const { wait_for(-1.0); }

bool HandleState::wait_for(double seconds) const {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!done_) {
    if (const auto signal = flush_signal.lock()) {
      lock.unlock();  // the signal's lock is never taken under a handle's
      signal->request();
      lock.lock();
    }
  }
  const auto finished = [this] { return done_; };
  if (seconds < 0) done_cv_.wait(lock, finished);
  else if (!done_cv_.wait_for(lock, std::chrono::duration<double>(seconds), finished)) return false;
  if (error_) std::rethrow_exception(error_);
  return true;
}

namespace {
const HandleState& checked(const std::shared_ptr<HandleState>& state) {
  CONCORD_ENFORCE(state != nullptr, InvalidArgument, "empty Handle (default-constructed)");
  return *state;
}
}  // namespace

bool Handle::poll() const { return checked(state_).done(); }

void Handle::wait() const { checked(state_).wait(); }

bool Handle::wait_for(double seconds) const { return checked(state_).wait_for(seconds); }

const std::vector<int64_t>& Handle::output_shape() const { return checked(state_).output_shape; }

const std::vector<uint8_t>& Handle::output_bytes() const {
  const HandleState& state = checked(state_);
  CONCORD_ENFORCE(!state.output_device, InvalidArgument, "the result is in memory of device ",
                  state.output_device_index, ": read it with output_data() or copy_output_to()");
  return state.output_bytes;
}

int32_t Handle::output_device() const { return checked(state_).output_device_index; }

const void* Handle::output_data() const {
  const HandleState& state = checked(state_);
  return state.output_device ? state.output_buffer.data() : state.output_bytes.data();
}

size_t Handle::output_nbytes() const {
  const HandleState& state = checked(state_);
  return state.output_device ? state.output_buffer.bytes() : state.output_bytes.size();
}

void Handle::copy_output_to(void* destination) const {
  const HandleState& state = checked(state_);
  const size_t bytes = output_nbytes();
  if (bytes == 0) return;
  if (!state.output_device) {
    std::memcpy(destination, state.output_bytes.data(), bytes);
    return;
  }
  auto stream = state.output_device->create_stream();
  stream->copy(destination, state.output_buffer.data(), bytes, CopyKind::kDeviceToDevice);
  stream->synchronize();
}

const std::vector<int64_t>& Handle::received_splits() const { return checked(state_).received_splits; }

}  // namespace concord
