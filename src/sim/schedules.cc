#include "sim/schedules.h"

#include <algorithm>

#include "algorithms/tree_pipeline.h"
#include "patterns/binary_tree.h"
#include "patterns/binomial_tree.h"
#include "patterns/chunking.h"
#include "patterns/ring.h"

namespace concord::sim {

Group Group::world(int size) {
  Group group;
  group.ranks.resize(size);
  for (int r = 0; r < size; ++r) group.ranks[r] = r;
  group.ready.assign(size, kNoOp);
  return group;
}

int chunk_count(size_t bytes, size_t chunk_bytes) {
  const size_t chunk = std::max<size_t>(chunk_bytes, 1);
  return static_cast<int>(std::max<size_t>(1, (bytes + chunk - 1) / chunk));
}

std::vector<OpId> append_ring_allreduce(Schedule& schedule, const Group& group, size_t count, size_t element_size,
                                        size_t chunk_bytes) {
  const int P = group.size();
  std::vector<OpId> done = group.ready;
  if (P == 1 || count == 0) return done;
  const int chunks = chunk_count(patterns::segment(count, P, 0).count * element_size, chunk_bytes);
  const int steps = 2 * (P - 1);
  // sent[(g % 2) * P * chunks + r * chunks + c]: message of step g, chunk c from member r.
  std::vector<OpId> sent(2 * static_cast<size_t>(P) * chunks);
  auto at = [&](int step, int member, int c) -> OpId& {
    return sent[(static_cast<size_t>(step % 2) * P + member) * chunks + c];
  };
  for (int g = 0; g < steps; ++g) {
    const bool reduce_scatter = g < P - 1;
    for (int r = 0; r < P; ++r) {
      const patterns::Ring ring{r, P};
      const int seg = reduce_scatter ? ring.reduce_scatter_send(g) : ring.allgather_send(g - (P - 1));
      const size_t seg_count = patterns::segment(count, P, seg).count;
      for (int c = 0; c < chunks; ++c) {
        const uint64_t bytes = patterns::segment(seg_count, chunks, c).count * element_size;
        const OpId after = g == 0 ? group.ready[r] : at(g - 1, ring.left(), c);
        at(g, r, c) =
            schedule.send(group.ranks[r], group.ranks[ring.right()], bytes, reduce_scatter ? bytes : 0, {after});
      }
    }
  }
  std::vector<OpId> last(chunks);
  for (int r = 0; r < P; ++r) {
    const int left = patterns::Ring{r, P}.left();
    for (int c = 0; c < chunks; ++c) last[c] = at(steps - 1, left, c);
    done[r] = schedule.join(group.ranks[r], last);
  }
  return done;
}

std::vector<OpId> append_tree_reduce(Schedule& schedule, const Group& group, const TreeShape& tree, int root,
                                     size_t count, size_t element_size, int chunks, int window) {
  const int P = group.size();
  std::vector<TreeLinks> links(P);
  for (int m = 0; m < P; ++m) links[m] = tree(m);
  // Members in an order where children come before their parents (reverse BFS from root).
  std::vector<int> order{root};
  for (size_t i = 0; i < order.size(); ++i)
    for (const int child : links[order[i]].children) order.push_back(child);
  std::reverse(order.begin(), order.end());

  // ups[c % kept][m]: member m's message of chunk c (the last `kept` chunks are kept).
  const int kept = window > 0 ? window : 1;
  std::vector<std::vector<OpId>> ups(kept, std::vector<OpId>(P, kNoOp));
  std::vector<OpId> root_done(chunks);
  std::vector<OpId> deps;
  for (int c = 0; c < chunks; ++c) {
    const uint64_t bytes = patterns::segment(count, chunks, c).count * element_size;
    std::vector<OpId>& up = ups[c % kept];
    for (const int m : order) {
      deps.assign(1, group.ready[m]);
      for (const int child : links[m].children) deps.push_back(up[child]);  // chunk c, just added
      if (m == root) {
        root_done[c] = schedule.join(group.ranks[m], deps);
        continue;
      }
      // Chunk c - window reduced at the parent: up[m] still holds it (window > 0) until now.
      if (window > 0 && c >= window) deps.push_back(up[m]);
      up[m] = schedule.send(group.ranks[m], group.ranks[links[m].parent], bytes, bytes, deps);
    }
  }
  return root_done;
}

std::vector<OpId> append_tree_broadcast(Schedule& schedule, const Group& group, const TreeShape& tree, int root,
                                        size_t count, size_t element_size, int chunks,
                                        const std::vector<OpId>& root_ready, std::vector<OpId>* first_chunk) {
  const int P = group.size();
  std::vector<TreeLinks> links(P);
  for (int m = 0; m < P; ++m) links[m] = tree(m);
  std::vector<int> order{root};  // parents before children
  for (size_t i = 0; i < order.size(); ++i)
    for (const int child : links[order[i]].children) order.push_back(child);

  std::vector<std::vector<OpId>> held(P, std::vector<OpId>(chunks, kNoOp));
  for (int c = 0; c < chunks; ++c) {
    held[root][c] = root_ready[c];
    const uint64_t bytes = patterns::segment(count, chunks, c).count * element_size;
    for (const int m : order)
      for (const int child : links[m].children)
        held[child][c] = schedule.send(group.ranks[m], group.ranks[child], bytes, 0, {held[m][c], group.ready[child]});
  }
  std::vector<OpId> done(P);
  for (int m = 0; m < P; ++m) done[m] = schedule.join(group.ranks[m], held[m]);
  if (first_chunk != nullptr && chunks > 0) {
    first_chunk->resize(P);
    for (int m = 0; m < P; ++m) (*first_chunk)[m] = held[m][0] == kNoOp ? done[m] : held[m][0];
  }
  return done;
}

TreeShape binomial_shape(int size) {
  return [size](int member) {
    const patterns::BinomialTree tree{member, size, 0};
    return TreeLinks{tree.parent(), tree.children()};
  };
}

TreeShape binary_shape(int size, int index) {
  return [size, index](int member) {
    const patterns::TreeNode node = patterns::double_binary_tree(member, size, index);
    TreeLinks links{node.parent, {}};
    for (const int child : node.children)
      if (child >= 0) links.children.push_back(child);
    return links;
  };
}

Schedule ring_schedule(const Problem& problem) {
  Schedule schedule(problem.ranks);
  append_ring_allreduce(schedule, Group::world(problem.ranks), problem.count, problem.element_size,
                        problem.chunk_bytes);
  return schedule;
}

namespace {

// Reduce then broadcast of `count` elements on one tree: the broadcast of chunk c starts at
// the root after every chunk is reduced (baseline) or after chunk c is (`overlapped`, C-Cube).
// Returns per member the operation after which it holds the final chunk 0 (empty if none).
std::vector<OpId> append_tree_allreduce(Schedule& schedule, const Group& group, const TreeShape& tree, int root,
                                        size_t count, size_t element_size, size_t chunk_bytes, bool overlapped) {
  if (group.size() == 1 || count == 0) return {};
  const int chunks = patterns::ChunkPlan::make(count, element_size, chunk_bytes).chunks;
  // The overlapped schedule models the receive window (with eager sends the leaves' chunks
  // would hold an inner node's incoming link and the chunks coming down would queue behind
  // them); the baseline keeps its eager model (its broadcast waits for the whole reduce).
  const auto reduced = append_tree_reduce(schedule, group, tree, root, count, element_size, chunks,
                                          overlapped ? TreePipeline::kWindow : 0);
  std::vector<OpId> root_ready = reduced;
  if (!overlapped) root_ready.assign(chunks, schedule.join(group.ranks[root], reduced));
  std::vector<OpId> first_chunk;
  append_tree_broadcast(schedule, group, tree, root, count, element_size, chunks, root_ready, &first_chunk);
  return first_chunk;
}

}  // namespace

TreeRun tree_run(const Problem& problem, int trees, bool overlapped) {
  const int P = problem.ranks;
  TreeRun run{Schedule(P), {}};
  const Group world = Group::world(P);
  for (int t = 0; t < trees; ++t) {
    const int root = trees == 1 ? 0 : patterns::double_binary_tree_root(P, t);
    auto first = append_tree_allreduce(run.schedule, world, binary_shape(P, trees == 1 ? 0 : t), root,
                                       patterns::segment(problem.count, trees, t).count, problem.element_size,
                                       problem.chunk_bytes, overlapped);
    if (t == 0) run.first_chunk_final = std::move(first);
  }
  return run;
}

Schedule tree_schedule(const Problem& problem) { return tree_run(problem, 1, false).schedule; }

Schedule double_tree_schedule(const Problem& problem) { return tree_run(problem, 2, false).schedule; }

Schedule overlapped_tree_schedule(const Problem& problem) { return tree_run(problem, 1, true).schedule; }

Schedule overlapped_double_tree_schedule(const Problem& problem) { return tree_run(problem, 2, true).schedule; }

std::vector<OpId> embed(Schedule& schedule, const Schedule& part, const Group& group) {
  const auto& ops = part.ops();
  const auto& deps = part.deps();
  const OpId base = static_cast<OpId>(schedule.size());
  std::vector<std::vector<OpId>> received(group.size());
  std::vector<OpId> mapped;
  for (OpId id = 0; id < ops.size(); ++id) {
    const Op& op = ops[id];
    mapped.clear();
    for (uint32_t k = 0; k < op.dep_count; ++k) mapped.push_back(base + deps[op.first_dep + k]);
    mapped.push_back(group.ready[op.src]);  // every op waits for its member to be ready
    if (op.join) {
      schedule.join(group.ranks[op.src], mapped);
    } else {
      schedule.send(group.ranks[op.src], group.ranks[op.dst], op.bytes, op.reduce_bytes, mapped);
      received[op.dst].push_back(base + id);
    }
  }
  std::vector<OpId> done(group.size());
  for (int m = 0; m < group.size(); ++m) {
    received[m].push_back(group.ready[m]);
    done[m] = schedule.join(group.ranks[m], received[m]);
  }
  return done;
}

Schedule hierarchical_schedule(const Problem& problem, int ranks_per_node, const NodePhase& reduce,
                               const std::function<Schedule(const Problem&)>& inter, const NodePhase& broadcast) {
  const int P = problem.ranks;
  Schedule schedule(P);
  if (P == 1 || problem.count == 0) return schedule;
  const int R = std::max(1, ranks_per_node);
  const int nodes = (P + R - 1) / R;
  const auto node_group = [&](int node) {
    Group local;
    for (int r = node * R; r < std::min(P, (node + 1) * R); ++r) local.ranks.push_back(r);
    local.ready.assign(local.ranks.size(), kNoOp);
    return local;
  };
  Group leaders;
  for (int node = 0; node < nodes; ++node) {
    const Group local = node_group(node);
    leaders.ranks.push_back(local.ranks[0]);
    leaders.ready.push_back(local.size() > 1 ? reduce(schedule, local, kNoOp) : kNoOp);
  }
  Problem among = problem;
  among.ranks = nodes;
  among.nodes = nodes;
  const auto allreduced = embed(schedule, inter(among), leaders);
  for (int node = 0; node < nodes; ++node) {
    const Group local = node_group(node);
    if (local.size() > 1) broadcast(schedule, local, allreduced[node]);
  }
  return schedule;
}

TreeShape chain_shape(int size) {
  return [size](int member) {
    TreeLinks links{member - 1, {}};
    if (member + 1 < size) links.children.push_back(member + 1);
    return links;
  };
}

}  // namespace concord::sim
