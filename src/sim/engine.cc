#include "sim/engine.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <vector>

#include "common/enforce.h"

namespace concord::sim {
namespace {

enum class EventKind : uint8_t { kReady, kArrive };

// Busy intervals of one link direction, sorted and disjoint (touching ones merged). Intervals
// that end before the simulation's current time are dropped lazily.
class LinkCalendar {
 public:
  /// Earliest s >= t with [s, s + d) free.
  double earliest_fit(double t, double d) const {
    auto it = std::upper_bound(busy_.begin() + head_, busy_.end(), t,
                               [](double value, const Interval& iv) { return value < iv.end; });
    double s = t;
    for (; it != busy_.end(); ++it) {
      if (it->start >= s + d) break;
      s = std::max(s, it->end);
    }
    return s;
  }
  void reserve(double start, double end, double now) {
    while (head_ < busy_.size() && busy_[head_].end <= now) ++head_;
    if (head_ > 64 && head_ * 2 > busy_.size()) {
      busy_.erase(busy_.begin(), busy_.begin() + head_);
      head_ = 0;
    }
    auto it = std::upper_bound(busy_.begin() + head_, busy_.end(), start,
                               [](double value, const Interval& iv) { return value < iv.start; });
    if (it != busy_.begin() + head_ && std::prev(it)->end == start) {
      std::prev(it)->end = end;
      if (it != busy_.end() && it->start == end) {
        std::prev(it)->end = it->end;
        busy_.erase(it);
      }
    } else if (it != busy_.end() && it->start == end) {
      it->start = start;
    } else {
      busy_.insert(it, {start, end});
    }
  }

 private:
  struct Interval {
    double start;
    double end;
  };
  std::vector<Interval> busy_;
  size_t head_ = 0;
};

// The token bucket of one shaped link direction: `tokens` bytes at time `at`, refilling at
// 1 / beta bytes per second up to the depth.
struct Bucket {
  double tokens = 0;
  double at = 0;

  double tokens_at(double t, const LinkParams& link) const {
    if (t <= at) return tokens;  // a gap filled before the last reservation: no refill
    return std::min(link.bucket_bytes, tokens + (t - at) / link.beta);
  }
  // Seconds the sender's link is busy sending `bytes` from time `t`: the message's
  // occupancy, then line rate while tokens last and the shaped rate after.
  double duration(double t, double bytes, const LinkParams& link) const {
    const double tokens_now = tokens_at(t, link);
    const double fast = std::min(bytes, tokens_now);
    return link.occupancy() + fast * link.line_beta + (bytes - fast) * link.beta;
  }
  // Takes `bytes` sent from time `t` for `seconds`.
  void take(double t, double seconds, double bytes, const LinkParams& link) {
    const double tokens_now = tokens_at(t, link);
    if (bytes <= tokens_now) {
      tokens = tokens_now - bytes;
      at = std::max(at, t);
    } else {  // the shaped part used every token as it came (refill during the occupancy
              // and the line-rate part is not credited: gap / beta bytes per message, a few KB)
      tokens = 0;
      at = std::max(at, t + seconds);
    }
  }
};

struct Event {
  double time;
  uint64_t sequence;  // insertion order breaks ties deterministically
  OpId op;
  EventKind kind;
  bool operator>(const Event& other) const {
    return time != other.time ? time > other.time : sequence > other.sequence;
  }
};

class Engine {
 public:
  Engine(const Schedule& schedule, const Topology& topology, double gamma)
      : schedule_(schedule),
        topology_(topology),
        gamma_(gamma),
        remaining_(schedule.size()),
        ready_at_(schedule.size(), 0.0),
        links_(topology.link_count()),
        buckets_(topology.link_count()),
        cpu_free_(topology.ranks(), 0.0) {
    build_dependents();
    for (int link = 0; link < topology.link_count(); ++link) buckets_[link].tokens = topology.link(link).bucket_bytes;
  }

  SimResult run(int max_calls) {
    double start = 0;
    std::vector<double> tokens = tokens_at(start);
    for (int call = 1; call <= max_calls; ++call) {
      run_call(start);
      const double end = result_.seconds;
      result_.seconds = end - start;
      for (double& at : result_.completed_at) at -= start;
      start = end;
      result_.calls = call;
      std::vector<double> next = tokens_at(start);
      result_.steady = call >= 2 && same_tokens(tokens, next);
      if (result_.steady) break;  // the buckets' steady state
      tokens = std::move(next);
    }
    if (max_calls == 1) result_.steady = true;  // one call asked for, not a steady state
    result_.traffic = schedule_.traffic();
    return result_;
  }

 private:
  // Every link's tokens at time `t` (0 for links without a bucket).
  std::vector<double> tokens_at(double t) const {
    std::vector<double> tokens(buckets_.size(), 0.0);
    for (size_t link = 0; link < buckets_.size(); ++link) {
      const LinkParams& params = topology_.link(static_cast<int>(link));
      if (params.bucket_bytes > 0) tokens[link] = buckets_[link].tokens_at(t, params);
    }
    return tokens;
  }
  static bool same_tokens(const std::vector<double>& a, const std::vector<double>& b) {
    for (size_t i = 0; i < a.size(); ++i)
      if (std::abs(a[i] - b[i]) > 1.0) return false;  // within a byte
    return true;
  }

  // One run of the schedule, every operation without dependencies ready at `start`;
  // result_.seconds becomes its absolute completion time.
  void run_call(double start) {
    const auto& ops = schedule_.ops();
    result_.completed_at.assign(ops.size(), start);
    result_.seconds = start;
    completed_ = 0;
    std::fill(ready_at_.begin(), ready_at_.end(), start);
    for (OpId id = 0; id < ops.size(); ++id) {
      remaining_[id] = ops[id].dep_count;
      if (remaining_[id] == 0) became_ready(id, start);
    }
    while (!queue_.empty()) {
      const Event event = queue_.top();
      queue_.pop();
      ++result_.events;
      if (event.kind == EventKind::kReady) transmit(event.op, event.time);
      else arrive(event.op, event.time);
    }
    CONCORD_ENFORCE(completed_ == ops.size(), InternalError, "simulation stalled: ", ops.size() - completed_, " of ",
                    ops.size(), " operations never became ready (dependency cycle)");
  }

  void build_dependents() {
    const auto& ops = schedule_.ops();
    const auto& deps = schedule_.deps();
    offsets_.assign(ops.size() + 1, 0);
    for (const OpId dep : deps) ++offsets_[dep + 1];
    for (size_t i = 0; i < ops.size(); ++i) offsets_[i + 1] += offsets_[i];
    dependents_.resize(deps.size());
    std::vector<uint32_t> fill(offsets_.begin(), offsets_.end() - 1);
    for (OpId id = 0; id < ops.size(); ++id)
      for (uint32_t k = 0; k < ops[id].dep_count; ++k) dependents_[fill[deps[ops[id].first_dep + k]]++] = id;
  }

  void push(double time, OpId op, EventKind kind) { queue_.push({time, sequence_++, op, kind}); }

  // `id`'s dependencies are all complete at `time`.
  void became_ready(OpId id, double time) {
    if (schedule_.op(id).join) complete(id, time);
    else push(time, id, EventKind::kReady);
  }

  void transmit(OpId id, double time) {
    const Op& op = schedule_.op(id);
    const Route route = topology_.route(op.src, op.dst);
    if (route.params.bucket_bytes > 0) return transmit_shaped(id, op, route, time);
    const LinkParams& link = route.params;
    const double duration = link.occupancy() + static_cast<double>(op.bytes) * link.beta;
    LinkCalendar& up = links_[route.up];
    LinkCalendar& down = links_[route.down];
    // Cut-through switch with output queueing: the message leaves on the sender's link at the
    // first free slot and is delivered on the receiver's link at its first free slot from then;
    // the part of alpha that does not occupy the links (LinkParams::gap) is added after.
    const double sent = up.earliest_fit(time, duration);
    const double start = down.earliest_fit(sent, duration);
    const double end = start + duration;
    if (duration > 0) {
      up.reserve(sent, sent + duration, time);
      down.reserve(start, end, time);
    }
    push(end + (link.alpha - link.occupancy()), id, EventKind::kArrive);
  }

  // A message on a token-bucket link: it leaves at the first free slot of the sender's
  // link, at line rate while the bucket holds tokens (more tokens later never make it
  // longer, so the slot found for the earlier estimate still fits); the receiver's link
  // takes it at line rate, ending no earlier than the last byte leaves the sender.
  void transmit_shaped(OpId id, const Op& op, const Route& route, double time) {
    const LinkParams& link = route.params;
    const double bytes = static_cast<double>(op.bytes);
    Bucket& bucket = buckets_[route.up];
    LinkCalendar& up = links_[route.up];
    LinkCalendar& down = links_[route.down];
    const double sent = up.earliest_fit(time, bucket.duration(time, bytes, link));
    const double duration = bucket.duration(sent, bytes, link);
    bucket.take(sent, duration, bytes, link);
    const double line = link.occupancy() + bytes * link.line_beta;
    const double start = down.earliest_fit(std::max(sent, sent + duration - line), line);
    const double end = std::max(sent + duration, start + line);
    if (duration > 0) up.reserve(sent, sent + duration, time);
    if (line > 0) down.reserve(start, start + line, time);
    push(end + (link.alpha - link.occupancy()), id, EventKind::kArrive);
  }

  void arrive(OpId id, double time) {
    const Op& op = schedule_.op(id);
    double done = time;
    if (op.reduce_bytes > 0) {
      const double duration = static_cast<double>(op.reduce_bytes) * gamma_;
      if (topology_.copies_use_cpu()) {
        // Shared memory: the rank's CPU copies what arrives over its intra-node link, so a
        // reduction and those copies take turns on one calendar (Topology::cpu_link).
        LinkCalendar& cpu = links_[topology_.cpu_link(op.dst)];
        const double start = cpu.earliest_fit(time, duration);
        done = start + duration;
        if (duration > 0) cpu.reserve(start, done, time);
      } else {
        done = std::max(time, cpu_free_[op.dst]) + duration;
        cpu_free_[op.dst] = done;
      }
    }
    complete(id, done);
  }

  // Marks `first` complete at `time` and releases its dependents (joins inline, iteratively).
  void complete(OpId first, double time) {
    std::vector<std::pair<OpId, double>> stack{{first, time}};
    while (!stack.empty()) {
      const auto [id, at] = stack.back();
      stack.pop_back();
      ++completed_;
      result_.completed_at[id] = at;
      result_.seconds = std::max(result_.seconds, at);
      for (uint32_t k = offsets_[id]; k < offsets_[id + 1]; ++k) {
        const OpId next = dependents_[k];
        ready_at_[next] = std::max(ready_at_[next], at);
        if (--remaining_[next] != 0) continue;
        if (schedule_.op(next).join) stack.push_back({next, ready_at_[next]});
        else push(ready_at_[next], next, EventKind::kReady);
      }
    }
  }

  const Schedule& schedule_;
  const Topology& topology_;
  const double gamma_;
  std::vector<uint32_t> remaining_;
  std::vector<double> ready_at_;
  std::vector<LinkCalendar> links_;
  std::vector<Bucket> buckets_;  // per link; used where the link's bucket_bytes > 0
  std::vector<double> cpu_free_;
  std::vector<uint32_t> offsets_;
  std::vector<OpId> dependents_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> queue_;
  uint64_t sequence_ = 0;
  size_t completed_ = 0;
  SimResult result_;
};

}  // namespace

SimResult simulate(const Schedule& schedule, const Topology& topology, double gamma, int max_calls) {
  CONCORD_ENFORCE(schedule.ranks() == topology.ranks(), InvalidArgument, "schedule has ", schedule.ranks(),
                  " ranks, topology ", topology.describe());
  CONCORD_ENFORCE(max_calls >= 1, InvalidArgument, "simulate: max_calls must be >= 1, got ", max_calls);
  return Engine(schedule, topology, gamma).run(max_calls);
}

}  // namespace concord::sim
