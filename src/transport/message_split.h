// How a transport sends a message larger than it can carry in one piece: MPI counts are
// ints, so MpiCommunicator cuts every isend/irecv of more than its maximum message size
// (1 GiB by default) into consecutive pieces of at most that size, posted in order with the
// same peer and tag; MPI's non-overtaking rule matches piece i of the send with piece i of
// the receive. The in-process transport cuts the same way when a test sets a small
// maximum (Communicator::set_max_message_bytes), so this logic is unit-tested with small
// buffers (tests/unit/test_message_split.cc). Both sides of a message must use the same
// maximum; an empty message is one empty piece.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "transport/communicator.h"

namespace concord {

/// The pieces of a `bytes`-byte message when each piece carries at most `max_piece` bytes
/// (max_piece >= 1): ceil(bytes / max_piece) pieces, at least one; all but the last carry
/// exactly max_piece bytes.
struct MessagePieces {
  size_t bytes = 0;
  size_t max_piece = 1;

  size_t count() const { return bytes == 0 ? 1 : (bytes - 1) / max_piece + 1; }
  /// Byte offset of piece `i` in the message.
  size_t offset(size_t i) const { return i * max_piece; }
  /// Bytes of piece `i`.
  size_t size(size_t i) const { return std::min(max_piece, bytes - offset(i)); }
};

/// A request made of the requests of a message's pieces: complete once all are.
class PiecewiseRequest : public TransportRequest {
 public:
  explicit PiecewiseRequest(std::vector<RequestPtr> pieces) : pieces_(std::move(pieces)) {}
  /// Tests the pieces still in flight in order, stopping at the first one not complete.
  bool test() override {
    while (next_ < pieces_.size()) {
      if (!pieces_[next_]->test()) return false;
      pieces_[next_++].reset();
    }
    return true;
  }

 private:
  std::vector<RequestPtr> pieces_;
  size_t next_ = 0;
};

/// Posts a `bytes`-byte message as pieces of at most `max_piece` bytes: post_piece(offset,
/// n) posts one piece (an isend or irecv of n bytes at byte `offset` of the message) and
/// returns its request. A message that fits in one piece is posted as is, with no wrapper.
template <typename PostPiece>
RequestPtr post_in_pieces(size_t bytes, size_t max_piece, PostPiece&& post_piece) {
  const MessagePieces pieces{bytes, std::max<size_t>(max_piece, 1)};
  const size_t count = pieces.count();
  if (count == 1) return post_piece(size_t{0}, bytes);
  std::vector<RequestPtr> requests;
  requests.reserve(count);
  for (size_t i = 0; i < count; ++i) requests.push_back(post_piece(pieces.offset(i), pieces.size(i)));
  return std::make_unique<PiecewiseRequest>(std::move(requests));
}

}  // namespace concord
