// The frame around what a rank publishes in the rendezvous store (its UCX worker address
// and host name), so a truncated, foreign or stale value is refused with an error instead
// of being handed to UCX. Layout, little-endian:
//   bytes 0..3   magic "CNCD"
//   bytes 4..5   version (1)
//   bytes 6..7   host name length H
//   bytes 8..11  payload length L (8 + H + address bytes)
//   bytes 12..15 FNV-1a 32-bit checksum of the payload
//   bytes 16..   process id (8 bytes), host name (H bytes), then the worker address
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace concord::rendezvous {

struct PeerAddress {
  std::string host;              ///< gethostname() of the rank: ranks of one host form a node
  int64_t pid = 0;               ///< the rank's process id on `host` (liveness of peers on one host)
  std::vector<uint8_t> address;  ///< ucp_worker_get_address()'s bytes
};

inline constexpr uint16_t kAddressFrameVersion = 1;

/// The framed bytes of `peer`.
std::vector<uint8_t> frame_address(const PeerAddress& peer);
/// The peer in `frame`. Throws CommError naming `rank` and what is wrong (short, bad
/// magic, other version, length or checksum mismatch).
PeerAddress unframe_address(const std::vector<uint8_t>& frame, int rank);

}  // namespace concord::rendezvous
