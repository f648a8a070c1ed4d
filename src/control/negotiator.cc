#include "control/negotiator.h"

#include <algorithm>
#include <map>

#include "common/enforce.h"
#include "common/logging.h"

namespace concord {
namespace {

// Status word (word 0 of the bit vector); each bit means "NOT ..." so that a bitwise AND
// across ranks leaves it set only if no rank has the condition.
constexpr uint64_t kNoShutdown = 1u << 0;
constexpr uint64_t kNoUncached = 1u << 1;
constexpr uint64_t kNoInvalid = 1u << 2;
constexpr uint64_t kNoStallCheck = 1u << 3;
constexpr uint64_t kNoPending = 1u << 4;  // no requests waiting on this rank
constexpr uint64_t kAllStatus = kNoShutdown | kNoUncached | kNoInvalid | kNoStallCheck | kNoPending;

void set_bit(std::vector<uint64_t>& words, uint32_t bit) { words[1 + bit / 64] |= uint64_t{1} << (bit % 64); }

std::vector<uint32_t> cache_bits(const std::vector<uint64_t>& words) {
  std::vector<uint32_t> bits;
  for (size_t w = 1; w < words.size(); ++w)
    for (uint64_t word = words[w]; word != 0; word &= word - 1)
      bits.push_back(static_cast<uint32_t>((w - 1) * 64 + __builtin_ctzll(word)));
  return bits;
}

}  // namespace

Negotiator::Negotiator(Communicator& control, const NegotiatorOptions& options)
    : comm_(control),
      options_(options),
      cache_(options.cache_capacity),
      last_stall_check_(std::chrono::steady_clock::now()),
      wake_(control) {
  if (comm_.rank() == 0) {
    coordinator_.emplace(comm_.size(), options.names);
    stall_inspector_.emplace(comm_.size(), options.stall_warning_seconds, options.stall_shutdown_seconds,
                             options.names);
  }
}

bool Negotiator::i_joined() const {
  return static_cast<int>(joined_.size()) < comm_.size() &&
         std::find(joined_.begin(), joined_.end(), comm_.rank()) != joined_.end();
}

Negotiator::Classified Negotiator::classify() {
  Classified out;
  const size_t words = 1 + (cache_.capacity() + 63) / 64;
  out.hit_bits.assign(words, 0);
  out.invalid_bits.assign(words, 0);
  out.hits.reserve(pending_.size());
  out.hit_bit.reserve(pending_.size());
  // A single request is classified on its own (one cache lookup: the per-tensor cost of a
  // cached backward pass); a group's members are classified together, after the singles.
  std::map<std::string, std::vector<Request>> groups;
  for (auto& request : pending_) {
    if (request.group_size > 1) {
      groups[request.group].push_back(std::move(request));
      continue;
    }
    const auto found = cache_.lookup(request);
    if (found.state == ResponseCache::State::kInvalid) {
      set_bit(out.invalid_bits, found.bit);
      out.any_invalid = true;
    }
    if (found.state == ResponseCache::State::kHit) {
      set_bit(out.hit_bits, found.bit);
      out.hits.push_back(std::move(request));
      out.hit_bit.push_back(found.bit);
    } else {
      out.uncached.push_back(std::move(request));
    }
  }
  pending_.clear();
  for (auto& [name, members] : groups) {
    std::vector<ResponseCache::Lookup> found;
    bool all_hit = true;
    for (const auto& request : members) {
      found.push_back(cache_.lookup(request));
      if (found.back().state == ResponseCache::State::kInvalid) {
        set_bit(out.invalid_bits, found.back().bit);
        out.any_invalid = true;
      }
      all_hit &= found.back().state == ResponseCache::State::kHit;
    }
    for (size_t i = 0; i < members.size(); ++i) {
      if (all_hit) {
        set_bit(out.hit_bits, found[i].bit);
        out.hit_bit.push_back(found[i].bit);
      }
      (all_hit ? out.hits : out.uncached).push_back(std::move(members[i]));
    }
  }
  return out;
}

std::vector<Response> Negotiator::take_common_hits(const std::vector<uint64_t>& common, Classified& mine) {
  const std::vector<uint32_t> bits = cache_bits(common);
  std::map<std::string, int32_t> group_members;
  for (uint32_t bit : bits) {
    const Request& parameters = cache_.parameters(bit);
    if (parameters.group_size > 1) ++group_members[parameters.group];
  }
  const auto has = [](const std::vector<uint64_t>& words, uint32_t bit) {
    return (words[1 + bit / 64] >> (bit % 64) & 1) != 0;
  };
  std::vector<uint64_t> taken(common.size(), 0);
  std::vector<Response> responses;
  responses.reserve(bits.size());
  for (uint32_t bit : bits) {
    // Every rank sets all bits of a group in the same cycle, so groups arrive whole; a
    // partial group (not expected) would wait for the next cycle, identically everywhere.
    const Request& parameters = cache_.parameters(bit);  // stays valid: touch() only relinks
    if (parameters.group_size > 1 && group_members[parameters.group] < parameters.group_size) continue;
    responses.push_back(cache_.response(bit));
    responses.back().joined = joined_;
    cache_.touch(bit);
    const bool requested = has(mine.hit_bits, bit);
    CONCORD_ENFORCE(requested || i_joined(), InternalError, "cached response for '", parameters.name,
                    "' which this rank has not requested");
    if (requested) set_bit(taken, bit);
    if (stall_inspector_) stall_inspector_->remove(parameters.name);
  }
  // This rank's hits that are not yet common on every rank stay pending, in order.
  size_t kept = 0;
  for (size_t i = 0; i < mine.hits.size(); ++i) {
    if (has(taken, mine.hit_bit[i])) continue;
    if (kept != i) mine.hits[kept] = std::move(mine.hits[i]);  // (a self-move would empty a vector)
    ++kept;
  }
  mine.hits.resize(kept);
  stats_.cache_hits += responses.size();
  return responses;
}

std::vector<Response> Negotiator::coordinate(const std::vector<Request>& uncached) {
  ++stats_.coordinator_rounds;
  stats_.cache_misses += uncached.size();
  for (const auto& request : uncached) sent_.emplace(request.name, request);
  const auto gathered = comm_.gather_bytes(encode(RequestList{uncached, false}), 0);
  ResponseList answer;
  std::vector<uint8_t> bytes;
  if (coordinator_) {
    const auto now = std::chrono::steady_clock::now();
    for (const auto& encoded : gathered) {
      for (const auto& request : decode_request_list(encoded).requests) {
        if (request.rank != 0) timeline_seen(request);
        stall_inspector_->record_submitted(request.name, collective_name(request.type), request.rank, now);
        coordinator_->add(request);
      }
    }
    answer.responses = coordinator_->take_ready();
    answer.joined = coordinator_->joined();
    for (const auto& response : answer.responses)
      for (const auto& name : response.names) stall_inspector_->remove(name);
    bytes = encode(answer);
  }
  comm_.broadcast_bytes(bytes, 0);
  if (!coordinator_) answer = decode_response_list(bytes);
  joined_ = answer.joined;
  cache_new(answer.responses);
  return answer.responses;
}

void Negotiator::cache_new(const std::vector<Response>& responses) {
  for (const auto& response : responses) {
    for (const auto& name : response.names) {
      auto it = sent_.find(name);
      const bool joined =
          std::find(response.joined.begin(), response.joined.end(), comm_.rank()) != response.joined.end();
      if (it == sent_.end() && joined) continue;  // this rank had joined: it takes part without a request
      if (it == sent_.end() && formed_by_members(response))
        continue;  // a set formed by its members, of which this rank is not one: applied, never cached
      CONCORD_ENFORCE(it != sent_.end(), InternalError, "response for tensor '", name,
                      "' which this rank has not sent to the coordinator");
      if (ResponseCache::cacheable(response) && response.joined.empty()) {
        if (auto evicted = cache_.put(response, it->second)) {
          ++stats_.evictions;
          if (!eviction_warned_) {
            CONCORD_LOG_WARN(
                "response cache full (CONCORD_CACHE_CAPACITY={}): evicted tensor '{}'; set "
                "CONCORD_CACHE_CAPACITY above the number of distinct tensors reduced per "
                "iteration to keep rank 0 out of the loop (warned once)",
                cache_.capacity(), *evicted);
            eviction_warned_ = true;
          }
        }
      }
      sent_.erase(it);
    }
  }
}

void Negotiator::timeline_seen(const Request& request) {
  if (timeline_ == nullptr || !timeline_->active()) return;
  if (!negotiating_.contains(request.name)) {
    timeline_->negotiate_start(request.name, collective_name(request.type));
    negotiating_[request.name] = true;
  }
  timeline_->negotiate_rank_ready(request.name, request.rank);
}

void Negotiator::timeline_answered(const std::vector<Response>& responses) {
  if (timeline_ == nullptr) return;
  for (const auto& response : responses)
    for (const auto& name : response.names)
      if (negotiating_.erase(name) > 0) timeline_->negotiate_end(name);
}

std::optional<std::string> Negotiator::stall_check() {
  ++stats_.stall_checks;
  const auto gathered = comm_.gather_bytes(encode(RequestList{pending_, false}), 0);
  std::vector<uint8_t> verdict;
  if (stall_inspector_) {
    const auto now = std::chrono::steady_clock::now();
    for (const auto& encoded : gathered)
      for (const auto& request : decode_request_list(encoded).requests)
        stall_inspector_->record_submitted(request.name, collective_name(request.type), request.rank, now);
    const StallReport report = stall_inspector_->check(now);
    for (const auto& warning : report.warnings) CONCORD_LOG_WARN("{}", warning);
    if (report.shutdown) verdict.assign(report.shutdown_message.begin(), report.shutdown_message.end());
  }
  comm_.broadcast_bytes(verdict, 0);
  if (verdict.empty()) return std::nullopt;
  return std::string(verdict.begin(), verdict.end());
}

double Negotiator::stall_period_seconds() const {
  const double limit = options_.stall_shutdown_seconds > 0
                           ? std::min(options_.stall_warning_seconds, options_.stall_shutdown_seconds)
                           : options_.stall_warning_seconds;
  return std::max(0.01, limit / 4);
}

bool Negotiator::stall_check_due() const {
  if (comm_.rank() != 0 || !anyone_pending_ || !options_.stall_check) return false;
  const auto elapsed = std::chrono::steady_clock::now() - last_stall_check_;
  return std::chrono::duration<double>(elapsed).count() >= stall_period_seconds();
}

ResponseList Negotiator::negotiate(std::vector<Request> new_requests, bool shutdown) {
  ++stats_.cycles;
  for (auto& request : new_requests) {
    timeline_seen(request);
    pending_.push_back(std::move(request));
  }
  Classified mine = classify();

  std::vector<uint64_t> bits = mine.hit_bits;
  if (i_joined()) std::fill(bits.begin(), bits.end(), ~uint64_t{0});  // let the others' hits through
  bits[0] = kAllStatus;
  if (shutdown) bits[0] &= ~kNoShutdown;
  if (!mine.uncached.empty()) bits[0] &= ~kNoUncached;
  if (mine.any_invalid) bits[0] &= ~kNoInvalid;
  if (!mine.hits.empty() || !mine.uncached.empty() || !sent_.empty()) bits[0] &= ~kNoPending;
  const auto now = std::chrono::steady_clock::now();
  if (comm_.rank() == 0 && options_.stall_check &&
      std::chrono::duration<double>(now - last_stall_check_).count() >= stall_period_seconds()) {
    bits[0] &= ~kNoStallCheck;
    last_stall_check_ = now;
  }
  comm_.allreduce_bits(bits, /*bitwise_and=*/true);
  ++rounds_;
  anyone_pending_ = !(bits[0] & kNoPending);

  if (!(bits[0] & kNoInvalid)) {
    comm_.allreduce_bits(mine.invalid_bits, /*bitwise_and=*/false);
    for (uint32_t bit : cache_bits(mine.invalid_bits)) {
      cache_.erase(bit);
      ++stats_.invalidations;
    }
  }
  ResponseList answer;
  answer.responses = take_common_hits(bits, mine);
  pending_ = std::move(mine.hits);  // hits not yet common on every rank: next cycle
  if (!(bits[0] & kNoUncached)) {
    auto fresh = coordinate(mine.uncached);
    answer.responses.insert(answer.responses.end(), fresh.begin(), fresh.end());
  }
  timeline_answered(answer.responses);
  answer.shutdown = !(bits[0] & kNoShutdown);
  if (answer.shutdown) {  // which ranks asked: one OR-allreduce of a rank bitmap, last cycle only
    std::vector<uint64_t> asked((comm_.size() + 63) / 64, 0);
    if (shutdown) asked[comm_.rank() / 64] |= uint64_t{1} << (comm_.rank() % 64);
    comm_.allreduce_bits(asked, /*bitwise_and=*/false);
    for (int r = 0; r < comm_.size(); ++r)
      if (asked[r / 64] >> (r % 64) & 1) answer.shutdown_ranks.push_back(r);
  }
  if (!(bits[0] & kNoStallCheck)) {
    if (auto message = stall_check()) {
      answer.shutdown = true;
      answer.shutdown_message = *message;
    }
  }
  // Every input of this decision is global (the AND result, the broadcast responses), so
  // every rank takes the same one.
  idle_ = answer.responses.empty() && (bits[0] & kNoInvalid) && (bits[0] & kNoUncached) && (bits[0] & kNoStallCheck) &&
          !answer.shutdown;
  return answer;
}

}  // namespace concord
