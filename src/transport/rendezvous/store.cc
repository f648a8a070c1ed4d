#include "transport/rendezvous/store.h"

#include <algorithm>
#include <thread>

#include "common/enforce.h"

namespace concord::rendezvous {
namespace {

// Polls of a waiting rank: 1 ms at first, doubling to 50 ms, so a rendezvous of many
// ranks does not flood the store and a waiting rank does not spin.
class PollInterval {
 public:
  void sleep() {
    std::this_thread::sleep_for(interval_);
    interval_ = std::min(interval_ * 2, std::chrono::milliseconds(50));
  }

 private:
  std::chrono::milliseconds interval_{1};
};

void check_abort(const std::function<std::optional<std::string>()>& abort) {
  if (!abort) return;
  if (auto message = abort()) CONCORD_THROW(CommError, *message);
}

}  // namespace

Bytes Store::get(const std::string& key, Clock::time_point deadline,
                 const std::function<std::optional<std::string>()>& abort) {
  PollInterval interval;
  for (;;) {
    if (auto value = try_get(key)) return *value;
    check_abort(abort);
    CONCORD_ENFORCE(Clock::now() < deadline, CommError, "rendezvous: key '", key, "' was not set in store ", describe(),
                    " before the deadline (CONCORD_INIT_TIMEOUT)");
    interval.sleep();
  }
}

void Store::wait(const std::vector<std::string>& keys, Clock::time_point deadline,
                 const std::function<std::optional<std::string>()>& abort,
                 const std::function<std::string(const std::vector<std::string>&)>& describe_missing) {
  std::vector<std::string> missing = keys;
  PollInterval interval;
  for (;;) {
    std::erase_if(missing, [this](const std::string& key) { return try_get(key).has_value(); });
    if (missing.empty()) return;
    check_abort(abort);
    if (Clock::now() >= deadline) {
      std::string text;
      for (const auto& key : missing) text += (text.empty() ? "" : ", ") + key;
      CONCORD_THROW(CommError, "rendezvous through ", describe(), " timed out (CONCORD_INIT_TIMEOUT): ",
                    describe_missing ? describe_missing(missing) : "keys never set: " + text);
    }
    interval.sleep();
  }
}

Bytes to_bytes(const std::string& text) { return Bytes(text.begin(), text.end()); }

std::string to_string(const Bytes& value) { return std::string(value.begin(), value.end()); }

}  // namespace concord::rendezvous
