#include "sim/engine.h"

#include <algorithm>
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
        cpu_free_(topology.ranks(), 0.0) {
    build_dependents();
  }

  SimResult run() {
    const auto& ops = schedule_.ops();
    result_.completed_at.assign(ops.size(), 0.0);
    for (OpId id = 0; id < ops.size(); ++id) {
      remaining_[id] = ops[id].dep_count;
      if (remaining_[id] == 0) became_ready(id, 0.0);
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
    result_.traffic = schedule_.traffic();
    return result_;
  }

 private:
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
    const double duration = route.params.alpha + static_cast<double>(op.bytes) * route.params.beta;
    LinkCalendar& up = links_[route.up];
    LinkCalendar& down = links_[route.down];
    // Cut-through switch with output queueing: the message leaves on the sender's link at the
    // first free slot and is delivered on the receiver's link at its first free slot from then.
    const double sent = up.earliest_fit(time, duration);
    const double start = down.earliest_fit(sent, duration);
    const double end = start + duration;
    if (duration > 0) {
      up.reserve(sent, sent + duration, time);
      down.reserve(start, end, time);
    }
    push(end, id, EventKind::kArrive);
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
  std::vector<double> cpu_free_;
  std::vector<uint32_t> offsets_;
  std::vector<OpId> dependents_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> queue_;
  uint64_t sequence_ = 0;
  size_t completed_ = 0;
  SimResult result_;
};

}  // namespace

SimResult simulate(const Schedule& schedule, const Topology& topology, double gamma) {
  CONCORD_ENFORCE(schedule.ranks() == topology.ranks(), InvalidArgument, "schedule has ", schedule.ranks(),
                  " ranks, topology ", topology.describe());
  return Engine(schedule, topology, gamma).run();
}

}  // namespace concord::sim
