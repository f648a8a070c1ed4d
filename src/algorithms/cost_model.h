// The alpha-beta-gamma cost model that ranks algorithms (Hockney's alpha-beta model plus a
// per-byte reduction cost, as in Thakur, Rabenseifner & Gropp, "Optimization of Collective
// Communication Operations in MPICH", IJHPCA 2005). Every algorithm describes one call by
// a Cost: its critical path (message rounds, bytes serialised on a link, bytes reduced)
// and its exact message and byte counts, which tests compare with the transport's
// counters. docs/algorithms.md lists each algorithm's formulas.
//
// Two link classes: intra-node (shared memory) and inter-node (network). Flat algorithms
// on several nodes are priced entirely at inter-node cost (their slowest link sets the
// pace); hierarchical ones split their path between the two.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/config.h"
#include "concord/types.h"

namespace concord {

struct DeviceCapabilities;  // algorithms/device_capabilities.h

/// Host <-> device copy and device kernel constants, in seconds, for the algorithms on
/// device buffers. The defaults are ASSUMPTIONS, not measurements (no GPU was available
/// when they were written): PCIe 4.0 x16 with pinned memory, about 25 GB/s each way, 10 us
/// to issue and complete one asynchronous copy; a reduce kernel reading two and writing one
/// byte per byte at about 1.5 TB/s of HBM (2e-12 s per byte reduced) plus 5 us launch and
/// completion. Not in the cost-model file: equal on every rank by construction.
struct StagingParams {
  double copy_alpha = 10e-6;      ///< per copy, s
  double copy_beta = 1.0 / 25e9;  ///< per byte, s/B
  double kernel_alpha = 5e-6;     ///< per reduce kernel, s
  double kernel_gamma = 2e-12;    ///< per byte reduced on the device, s/B
};

/// Machine constants, in seconds. Measured by `concord-calibrate` (tools/cli/calibrate.cc),
/// stored as JSON and overridable by CONCORD_COST_* variables. The intra-node and MPI
/// defaults are concord-calibrate's values at 2 ranks on the project's 2-core CI machine
/// (Open MPI 4.1.4 shared memory, 2026-11-21); the inter-node defaults assume 10 Gbit/s
/// Ethernet with TCP (30 us, 1.25 GB/s).
struct CostParams {
  double alpha = 1.5e-6;             ///< intra-node latency per message, s
  double beta = 2.0e-10;             ///< intra-node transfer time per byte, s/B (5 GB/s)
  double gamma = 8.3e-11;            ///< reduction time per byte (float32 sum, out of cache), s/B
  double inter_alpha = 30e-6;        ///< inter-node latency per message, s
  double inter_beta = 1.0 / 1.25e9;  ///< inter-node transfer time per byte, s/B
  /// The MPI library's own allreduce ("mpi" algorithm) is a black box with its own
  /// constants: its latency per round and time per byte, fitted by concord-calibrate from
  /// MPI_Allreduce of 8 bytes and of a 64 MiB message.
  double mpi_alpha = 1.0e-6;
  double mpi_beta = 5.7e-10;
  /// Copies and kernels of device buffers (defaults only; see StagingParams).
  StagingParams staging = {};

  /// The largest cost-model file load() reads (bytes): the constants take ~200 bytes, each
  /// configuration's autotune table (autotune.h) ~3 KiB; AutotuneTable::save keeps the file
  /// below this.
  static constexpr size_t kMaxFileBytes = 1024 * 1024;
  /// Reads the JSON written by save(); missing keys keep their defaults. Throws
  /// InvalidArgument naming the file when it cannot be read, is larger than kMaxFileBytes
  /// or cannot be parsed (parse()).
  static CostParams load(const std::string& path);
  /// Parses the text of a cost-model file (`source` names it in errors): a JSON object whose
  /// known keys are numbers >= 0 (other keys, e.g. "autotune", are ignored). Throws
  /// InvalidArgument otherwise.
  static CostParams parse(const std::string& text, const std::string& source);
  /// Writes {"alpha": ..., "beta": ..., ...} (seconds) into `path`, keeping the file's other
  /// keys (the autotune tables). A missing parent folder is created readable by the owner
  /// only (0700, like ~/.cache/concord). Throws InvalidArgument on I/O error.
  void save(const std::string& path) const;
  /// Defaults, then the file named by CONCORD_COST_MODEL (or ~/.cache/concord/cost_model.json
  /// when that variable is empty and the file exists), then CONCORD_COST_ALPHA/BETA/GAMMA/
  /// INTER_ALPHA/INTER_BETA when set.
  static CostParams from_env();
  /// {"alpha": ..., ...} JSON text, every constant by name (for rank 0's broadcast).
  std::string encode() const;
  /// Reads encode()'s text by key: the constants it names, defaults for the others.
  /// Throws InvalidArgument when malformed.
  static CostParams decode(const std::string& text);
};

/// Where a collective's buffer lives: each registry row runs on one kind (the host
/// algorithms on host memory; "staged", "staged_gpu", "cuda_aware", "nccl" on device memory).
enum class MemoryKind { kHost, kDevice };

/// What an algorithm is asked to do. For allreduce and reduce-scatter `count` elements of
/// `element_size` bytes each; for allgather `count` is the total output bytes
/// (element_size 1); for broadcast the message bytes; for alltoall each rank's total send
/// bytes (P blocks).
struct Problem {
  int ranks = 1;  ///< world size P
  int nodes = 1;  ///< number of nodes (hosts) the ranks span
  size_t count = 0;
  size_t element_size = 4;
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  size_t chunk_bytes = default_chunk_bytes();  ///< pipelining unit (CONCORD_RING_CHUNK_BYTES)
  bool native_available = false;               ///< the transport offers MPI_Allreduce
  bool uniform_nodes = true;                   ///< every node holds the same number of ranks
  MemoryKind memory = MemoryKind::kHost;       ///< where the buffer lives
  /// For device buffers: what the communicator and device offer, agreed on every rank
  /// (agree_device_capabilities()); null means nothing (every device row that needs a
  /// capability declines).
  const DeviceCapabilities* device = nullptr;

  size_t bytes() const { return count * element_size; }
};

/// What one rank sends in one call (messages, bytes), for algorithms whose ranks differ:
/// composed algorithms add their phases' per-rank traffic to get exact per-rank maxima.
struct RankTraffic {
  uint64_t messages = 0;
  uint64_t bytes = 0;
};

/// One call's cost. Rounds and bytes are along the critical path; the counts are exact.
struct Cost {
  double rounds = 0;        ///< intra-node message rounds in sequence (alpha terms)
  double wire_bytes = 0;    ///< intra-node bytes serialised on the busiest link (beta terms)
  double inter_rounds = 0;  ///< inter-node message rounds
  double inter_wire_bytes = 0;
  double reduce_bytes = 0;           ///< bytes reduced in sequence (gamma terms)
  double native_rounds = 0;          ///< rounds of the MPI library's allreduce (mpi_alpha terms)
  double native_wire_bytes = 0;      ///< its bytes on the critical path (mpi_beta terms)
  uint64_t max_messages_sent = 0;    ///< by the busiest rank
  uint64_t max_bytes_sent = 0;       ///< by the busiest rank
  uint64_t total_messages_sent = 0;  ///< summed over all ranks
  uint64_t total_bytes_sent = 0;     ///< summed over all ranks

  /// Predicted time in seconds.
  double seconds(const CostParams& params) const {
    return rounds * params.alpha + wire_bytes * params.beta + inter_rounds * params.inter_alpha +
           inter_wire_bytes * params.inter_beta + reduce_bytes * params.gamma + native_rounds * params.mpi_alpha +
           native_wire_bytes * params.mpi_beta;
  }
  /// For flat algorithms: moves the critical path to the inter-node link when `nodes` > 1.
  Cost& place(int nodes) {
    if (nodes > 1) {
      inter_rounds += rounds;
      inter_wire_bytes += wire_bytes;
      rounds = 0;
      wire_bytes = 0;
    }
    return *this;
  }
};

/// What a call of an algorithm adds on its critical path when it runs on device buffers,
/// beyond its Cost: reduce kernels launched in sequence (kernel_alpha each) and message
/// steps in sequence (over a staged transport each step copies its message down before the
/// send and up after the receive: 2 copy_alpha). device_seconds()
/// (algorithms/allreduce_device.h) prices them; each host algorithm that serves device
/// memory says its own (a static device_steps(problem)).
struct DeviceSteps {
  double kernels = 0;   ///< reduce kernel launches in sequence
  double messages = 0;  ///< message steps in sequence
};

}  // namespace concord
