#include "transport/rendezvous/world_rendezvous.h"

#include "common/enforce.h"

namespace concord::rendezvous {
namespace {

class Rendezvous {
 public:
  Rendezvous(Store& store, const RendezvousOptions& options)
      : store_(store), options_(options), prefix_(key_prefix(options.run_id)) {}

  std::vector<PeerAddress> run(const PeerAddress& mine) {
    const int rank = options_.rank, size = options_.size;
    const int64_t claims = store_.add(key("claim/", rank), 1);
    if (claims != 1)
      fail("rank " + std::to_string(rank) + " was claimed by " + std::to_string(claims) +
           " processes (duplicate RANK; or a store left over from an earlier job with the same run id)");
    store_.set(key("size/", rank), to_bytes(std::to_string(size)));
    store_.set(key("addr/", rank), frame_address(mine));
    std::vector<std::string> keys;
    for (int r = 0; r < size; ++r) keys.push_back(key("addr/", r));
    store_.wait(keys, options_.deadline, abort_check(), [&](const std::vector<std::string>& missing) {
      std::string ranks;
      for (const auto& k : missing) ranks += (ranks.empty() ? "" : ", ") + k.substr(k.rfind('/') + 1);
      return "rank(s) " + ranks + " of " + std::to_string(size) + " never arrived (rank " + std::to_string(rank) +
             " waited; a rank that did not start, crashed, or was told another store or run id)";
    });
    std::vector<PeerAddress> peers(size);
    for (int r = 0; r < size; ++r) {
      const std::string told = to_string(store_.get(key("size/", r), options_.deadline, abort_check()));
      if (told != std::to_string(size))
        fail("world size disagreement: rank " + std::to_string(r) + " was told WORLD_SIZE=" + told + ", rank " +
             std::to_string(rank) + " was told " + std::to_string(size));
      try {
        peers[r] = unframe_address(*store_.try_get(key("addr/", r)), r);
      } catch (const CommError& error) {
        fail(error.what());
      }
    }
    if (store_.add(key("", -1) + "arrived", 1) == size) store_.set(prefix_ + "ready", to_bytes("1"));
    store_.get(prefix_ + "ready", options_.deadline, abort_check());
    return peers;
  }

 private:
  std::string key(const std::string& what, int rank) const {
    return prefix_ + what + (rank >= 0 ? std::to_string(rank) : "");
  }

  // Publishes `why` as the job's abort reason (the first one wins) and throws it.
  [[noreturn]] void fail(const std::string& why) {
    const std::string message = "rendezvous through " + store_.describe() + " failed: " + why;
    if (!store_.try_get(prefix_ + "abort")) store_.set(prefix_ + "abort", to_bytes(message));
    CONCORD_THROW(CommError, message);
  }

  std::function<std::optional<std::string>()> abort_check() {
    return [this]() -> std::optional<std::string> {
      if (auto reason = store_.try_get(prefix_ + "abort")) return to_string(*reason);
      return std::nullopt;
    };
  }

  Store& store_;
  const RendezvousOptions& options_;
  std::string prefix_;
};

}  // namespace

std::vector<PeerAddress> exchange_addresses(Store& store, const RendezvousOptions& options, const PeerAddress& mine) {
  return Rendezvous(store, options).run(mine);
}

std::string key_prefix(const std::string& run_id) { return "concord/" + run_id + "/"; }

}  // namespace concord::rendezvous
