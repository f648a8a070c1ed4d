#include "sparse/coo_exchange.h"

#include <algorithm>
#include <sstream>

#include "common/enforce.h"
#include "transport/request_set.h"

namespace concord::sparse {

std::vector<int64_t> exchange_counts(Communicator& comm, const std::vector<int64_t>& send_counts, int64_t n,
                                     const std::string& algorithm) {
  const int P = comm.size(), r = comm.rank();
  CONCORD_ENFORCE(static_cast<int>(send_counts.size()) == P, InternalError, algorithm, ": ", send_counts.size(),
                  " send counts for ", P, " ranks");
  std::vector<int64_t> outgoing(2 * P), incoming(2 * P);
  RequestSet requests;
  for (int s = 1; s < P; ++s) {
    const int source = (r - s + P) % P, destination = (r + s) % P;
    requests.post(comm.irecv(&incoming[2 * source], 2 * sizeof(int64_t), source, kCountExchangeTag));
    outgoing[2 * destination] = send_counts[destination];
    outgoing[2 * destination + 1] = n;
    requests.post(comm.isend(&outgoing[2 * destination], 2 * sizeof(int64_t), destination, kCountExchangeTag));
  }
  requests.wait();
  incoming[2 * r] = send_counts[r];
  incoming[2 * r + 1] = n;

  std::vector<int64_t> recv_counts(P), lengths(P);
  for (int q = 0; q < P; ++q) {
    recv_counts[q] = incoming[2 * q];
    lengths[q] = incoming[2 * q + 1];
  }
  check_lengths(lengths, n, algorithm);
  for (int q = 0; q < P; ++q)  // bounds the receive buffers before they are allocated
    CONCORD_ENFORCE(recv_counts[q] >= 0 && recv_counts[q] <= n, InternalError, algorithm, ": rank ", q, " announced ",
                    recv_counts[q], " entries for a vector of n=", n);
  return recv_counts;
}

void check_lengths(const std::vector<int64_t>& lengths, int64_t n, const std::string& algorithm) {
  bool negative = false, mismatch = false;
  for (int64_t length : lengths) {
    negative |= length < 0;
    mismatch |= length != n;
  }
  if (!negative && !mismatch) return;
  std::ostringstream ns;
  for (size_t q = 0; q < lengths.size(); ++q) ns << (q ? ", " : "") << "rank " << q << ": n=" << lengths[q];
  if (negative) CONCORD_THROW(InvalidArgument, algorithm, ": gradient length n < 0 (", ns.str(), ")");
  CONCORD_THROW(MismatchError, algorithm, ": ranks passed different gradient lengths n (", ns.str(), ")");
}

void RotatedExchange::run(const uint8_t* send, const std::vector<int64_t>& send_counts,
                          const std::vector<int64_t>& recv_counts, size_t index_bytes, int bucket_steps,
                          const BlockConsumer& consume) {
  const int P = comm_.size(), r = comm_.rank();
  CONCORD_ENFORCE(bucket_steps >= 1, InvalidArgument, "bucket_steps must be >= 1, got ", bucket_steps);
  std::vector<size_t> send_offsets(P + 1, 0), recv_offsets(P + 1, 0);
  for (int q = 0; q < P; ++q) {
    send_offsets[q + 1] = send_offsets[q] + coo_wire_bytes(send_counts[q], index_bytes);
    recv_offsets[q + 1] = recv_offsets[q] + coo_wire_bytes(q == r ? 0 : recv_counts[q], index_bytes);
  }
  uint8_t* receive = receive_.get(recv_offsets[P]);

  const int steps_per_bucket = std::min(bucket_steps, P);
  const int buckets = (P + steps_per_bucket - 1) / steps_per_bucket;
  auto consume_bucket = [&](int bucket) {
    for (int s = bucket * steps_per_bucket; s < std::min(P, (bucket + 1) * steps_per_bucket); ++s) {
      const int source = (r - s + P) % P;
      if (source == r) {
        if (send_counts[r] > 0) consume(r, send + send_offsets[r], send_counts[r]);
      } else if (recv_counts[source] > 0) {
        consume(source, receive + recv_offsets[source], recv_counts[source]);
      }
    }
  };
  RequestSet in_flight;
  for (int bucket = 0; bucket <= buckets; ++bucket) {
    if (bucket < buckets) {
      for (int s = bucket * steps_per_bucket; s < std::min(P, (bucket + 1) * steps_per_bucket); ++s) {
        if (s == 0) continue;
        const int source = (r - s + P) % P, destination = (r + s) % P;
        if (recv_counts[source] > 0)
          in_flight.post(comm_.irecv(receive + recv_offsets[source], recv_offsets[source + 1] - recv_offsets[source],
                                     source, kRotationTag));
        if (send_counts[destination] > 0)
          in_flight.post(comm_.isend(send + send_offsets[destination],
                                     send_offsets[destination + 1] - send_offsets[destination], destination,
                                     kRotationTag));
      }
    }
    if (bucket > 0) consume_bucket(bucket - 1);  // overlaps the messages of `bucket`
    in_flight.wait();
  }
}

}  // namespace concord::sparse
