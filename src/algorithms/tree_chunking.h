// How many pipelined chunks a tree allreduce cuts its data into, per call (CONCORD_TREE_CHUNKS,
// Config::tree_chunks). The tree family (tree, double_tree, overlapped_tree,
// overlapped_double_tree) pipelines each tree's share of the buffer in K chunks; K sets the
// trade-off between the 2 D + K - 1 pipeline steps (alpha terms) and the chunk size (beta
// terms). Three settings:
//   kTreeChunksFromBytes: chunks of Problem::chunk_bytes (CONCORD_RING_CHUNK_BYTES), as before;
//   kTreeChunksAuto:      C-Cube's K_opt = sqrt(D beta m / alpha) for the m bytes of one tree
//                         (Jo, Son & Kim, HPCA 2023; optimal_chunk_bytes()), D = ceil(log2 P);
//   kTreeChunksTurnaround (the default): the overlapped trees take K_opt when it is larger
//                         than the byte chunking's K, the byte chunking otherwise, and the
//                         non-overlapped trees keep the byte chunking. Why: the cost model
//                         (header of allreduce_overlapped_tree.h) gives the overlapped tree
//                         a total time (2 D + K - 1)(alpha + beta m/K), smallest at K_opt,
//                         and a gradient turnaround (first chunk final everywhere) of
//                         2 D (alpha + beta m/K), falling with K. So K_opt > K_bytes is
//                         better in both; K_opt < K_bytes would shorten the total but delay
//                         the first chunk, which forward chaining (C-Cube's gradient
//                         queuing) waits for, so the larger K is kept;
//   K >= 1:               exactly K chunks per tree when each tree's share has at least
//                         K (K - 1) elements (fewer, equal chunks otherwise: ChunkPlan cuts
//                         chunks of ceil(m / K) elements).
// The choice is expressed as the Problem's chunk_bytes, which both the algorithm (built with
// it) and its cost() read, so exact counts stay exact; it depends only on the Problem, the
// cost constants and the setting, which are equal on every rank.
#pragma once

#include <cstdint>
#include <string>

#include "algorithms/cost_model.h"

namespace concord {

/// Trees the allreduce registered as `algorithm` pipelines over: 1 for "tree" and
/// "overlapped_tree", 2 for "double_tree" and "overlapped_double_tree", the same for their
/// device rows ("cuda_aware_tree", "staged_gpu_double_tree", ...: host_algorithm_of()),
/// 0 for every other algorithm (not affected by CONCORD_TREE_CHUNKS).
int tree_count(const std::string& algorithm);

/// True for "overlapped_tree" and "overlapped_double_tree" (C-Cube's schedules) and their
/// device rows.
bool tree_overlapped(const std::string& algorithm);

/// The Problem `algorithm` runs `problem` with: chunk_bytes replaced per `tree_chunks`
/// (kTreeChunksFromBytes, kTreeChunksAuto, kTreeChunksTurnaround or K >= 1; common/config.h) when `algorithm` is a
/// tree allreduce, `problem` unchanged otherwise or when count is 0. Tree t of T holds
/// patterns::segment(count, T, t) elements; the chunk size is computed for tree 0 (the
/// larger share). Throws InvalidArgument for tree_chunks < -2.
Problem tree_chunked_problem(const std::string& algorithm, const Problem& problem, int64_t tree_chunks,
                             const CostParams& params);

}  // namespace concord
