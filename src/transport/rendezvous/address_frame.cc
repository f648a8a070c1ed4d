#include "transport/rendezvous/address_frame.h"

#include <cstring>

#include "common/enforce.h"

namespace concord::rendezvous {
namespace {

constexpr char kMagic[4] = {'C', 'N', 'C', 'D'};
constexpr size_t kHeaderBytes = 16;
constexpr size_t kPidBytes = 8;  // the process id at the start of the payload

uint32_t fnv1a(const uint8_t* data, size_t bytes) {
  uint32_t hash = 2166136261u;
  for (size_t i = 0; i < bytes; ++i) hash = (hash ^ data[i]) * 16777619u;
  return hash;
}

template <typename T>
void put(std::vector<uint8_t>& out, size_t offset, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) out[offset + i] = static_cast<uint8_t>(value >> (8 * i));
}

template <typename T>
T take(const std::vector<uint8_t>& in, size_t offset) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) value |= static_cast<T>(static_cast<T>(in[offset + i]) << (8 * i));
  return value;
}

}  // namespace

std::vector<uint8_t> frame_address(const PeerAddress& peer) {
  const size_t payload = kPidBytes + peer.host.size() + peer.address.size();
  std::vector<uint8_t> frame(kHeaderBytes + payload);
  std::memcpy(frame.data(), kMagic, 4);
  put<uint16_t>(frame, 4, kAddressFrameVersion);
  put<uint16_t>(frame, 6, static_cast<uint16_t>(peer.host.size()));
  put<uint32_t>(frame, 8, static_cast<uint32_t>(payload));
  put<uint64_t>(frame, kHeaderBytes, static_cast<uint64_t>(peer.pid));
  std::memcpy(frame.data() + kHeaderBytes + kPidBytes, peer.host.data(), peer.host.size());
  if (!peer.address.empty())
    std::memcpy(frame.data() + kHeaderBytes + kPidBytes + peer.host.size(), peer.address.data(), peer.address.size());
  put<uint32_t>(frame, 12, fnv1a(frame.data() + kHeaderBytes, payload));
  return frame;
}

PeerAddress unframe_address(const std::vector<uint8_t>& frame, int rank) {
  CONCORD_ENFORCE(frame.size() >= kHeaderBytes, CommError, "rendezvous: rank ", rank, "'s address record has ",
                  frame.size(), " bytes, shorter than its ", kHeaderBytes, "-byte header (truncated)");
  CONCORD_ENFORCE(std::memcmp(frame.data(), kMagic, 4) == 0, CommError, "rendezvous: rank ", rank,
                  "'s address record does not start with the magic \"CNCD\": not written by Concord");
  const auto version = take<uint16_t>(frame, 4);
  CONCORD_ENFORCE(version == kAddressFrameVersion, CommError, "rendezvous: rank ", rank,
                  "'s address record has version ", version, ", this Concord reads version ", kAddressFrameVersion,
                  " (mixed Concord versions in one job?)");
  const auto host_bytes = take<uint16_t>(frame, 6);
  const auto payload = take<uint32_t>(frame, 8);
  CONCORD_ENFORCE(frame.size() == kHeaderBytes + payload && kPidBytes + host_bytes <= payload, CommError,
                  "rendezvous: rank ", rank, "'s address record says ", payload, " payload bytes (host name ",
                  host_bytes, ") but has ", frame.size() - kHeaderBytes, " (truncated or corrupt)");
  CONCORD_ENFORCE(take<uint32_t>(frame, 12) == fnv1a(frame.data() + kHeaderBytes, payload), CommError,
                  "rendezvous: rank ", rank, "'s address record fails its checksum (corrupt)");
  PeerAddress peer;
  peer.pid = static_cast<int64_t>(take<uint64_t>(frame, kHeaderBytes));
  peer.host.assign(reinterpret_cast<const char*>(frame.data() + kHeaderBytes + kPidBytes), host_bytes);
  peer.address.assign(frame.begin() + kHeaderBytes + kPidBytes + host_bytes, frame.end());
  return peer;
}

}  // namespace concord::rendezvous
