// concord-pingpong: point-to-point latency and bandwidth between ranks 0 and 1 over Concord's
// transport (whichever CONCORD_TRANSPORT chose: MPI, or UCX with its shared memory, CMA or
// TCP) and over Gloo's TCP pair transport (libgloo-dev; gloo::transport::tcp, the transport
// of torch.distributed's Gloo backend) in the same processes, one after the other: the
// measurement behind the transport choice (docs/architecture.md, "The way in"). Ping-pong:
// rank 0 sends N bytes, rank 1 receives and sends them back; one-way time = round trip / 2,
// bandwidth = N / one-way time. Ranks other than 0 and 1 only join the rendezvous.
//
// Usage (any launcher Concord starts under; 2 ranks, e.g.):
//   concord-run --launcher local -np 2 concord-pingpong --gloo-store /tmp/gloo-store
//   scripts/cluster.sh -H 2 --launcher store -- concord-pingpong --gloo-store /tmp/gloo-store
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "concord/concord.h"
#include "transport/communicator.h"
#include "transport/request_set.h"
#include "transport/transport_world.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kTag = 7;  // the benchmark's own duplicate carries nothing else

// One round trip of `bytes` between ranks 0 and 1 (rank 0 sends first).
using RoundTrip = std::function<void(std::vector<char>&, size_t bytes)>;

// Seconds of one one-way transfer of `bytes`: 3 untimed round trips, then as many timed ones
// as fit in `min_seconds` by rank 0's estimate (5..100000), the count broadcast so that every
// rank runs the same number.
double one_way_seconds(concord::Communicator& comm, const RoundTrip& round_trip, std::vector<char>& buffer,
                       size_t bytes, double min_seconds) {
  const auto warmup_start = Clock::now();
  for (int i = 0; i < 3; ++i) round_trip(buffer, bytes);
  const double each = std::chrono::duration<double>(Clock::now() - warmup_start).count() / 3;
  std::vector<uint8_t> count(sizeof(int64_t));
  const int64_t wanted = std::clamp<int64_t>(static_cast<int64_t>(min_seconds / std::max(each, 1e-9)), 5, 100000);
  std::memcpy(count.data(), &wanted, sizeof wanted);
  comm.broadcast_bytes(count, 0);
  int64_t iterations = 0;
  std::memcpy(&iterations, count.data(), sizeof iterations);
  const auto start = Clock::now();
  for (int64_t i = 0; i < iterations; ++i) round_trip(buffer, bytes);
  return std::chrono::duration<double>(Clock::now() - start).count() / static_cast<double>(iterations) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"concord-pingpong: ping-pong between ranks 0 and 1 over Concord's transport and Gloo's TCP pairs"};
  std::string gloo_store;
  size_t max_bytes = 16 << 20;
  double min_seconds = 0.2;
  app.add_option("--gloo-store", gloo_store, "directory for Gloo's file store (shared by the ranks; empty: no Gloo)");
  app.add_option("--max-bytes", max_bytes, "largest message (bytes; sizes 8, 64, ... x8)");
  app.add_option("--min-time", min_seconds, "seconds of round trips per size and transport");
  CLI11_PARSE(app, argc, argv);

  concord::init();
  auto& world = concord::process_world();
  auto comm = world.duplicate("pingpong");
  const int rank = comm->rank();
  std::unique_ptr<gloo::rendezvous::Context> gloo;
  if (!gloo_store.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    auto device = gloo::transport::tcp::CreateDevice(gloo::transport::tcp::attr(host));
    gloo::rendezvous::FileStore file_store(gloo_store);
    // Keys of this run only (rank 0's process id and time, broadcast), so a reused store
    // directory never hands out an earlier run's addresses.
    std::string run = std::to_string(::getpid()) + "-" + std::to_string(Clock::now().time_since_epoch().count());
    std::vector<uint8_t> run_bytes(run.begin(), run.end());
    comm->broadcast_bytes(run_bytes, 0);
    gloo::rendezvous::PrefixStore store("pingpong-" + std::string(run_bytes.begin(), run_bytes.end()), file_store);
    gloo = std::make_unique<gloo::rendezvous::Context>(rank, comm->size());
    gloo->connectFullMesh(store, device);
  }
  const RoundTrip over_concord = [&](std::vector<char>& buffer, size_t bytes) {
    if (rank > 1) return;
    concord::RequestSet requests;
    const int peer = 1 - rank;
    if (rank == 0) {
      requests.post(comm->isend(buffer.data(), bytes, peer, kTag));
      requests.post(comm->irecv(buffer.data(), bytes, peer, kTag));
    } else {
      requests.post(comm->irecv(buffer.data(), bytes, peer, kTag));
      requests.wait();
      requests.post(comm->isend(buffer.data(), bytes, peer, kTag));
    }
    requests.wait();
  };
  const RoundTrip over_gloo = [&](std::vector<char>& buffer, size_t bytes) {
    if (rank > 1) return;
    auto unbound = gloo->createUnboundBuffer(buffer.data(), bytes);
    const int peer = 1 - rank;
    if (rank == 0) {
      unbound->send(peer, kTag);
      unbound->waitSend();
      unbound->recv(peer, kTag);
      unbound->waitRecv();
    } else {
      unbound->recv(peer, kTag);
      unbound->waitRecv();
      unbound->send(peer, kTag);
      unbound->waitSend();
    }
  };
  if (rank == 0) {
    std::printf("# concord-pingpong: ranks 0 and 1 of %d; Concord over %s (%s launcher)%s\n", comm->size(),
                world.origin().transport.c_str(), world.origin().launcher.c_str(),
                gloo ? "; Gloo over its TCP pairs" : "");
    std::printf("# %10s %14s %14s %14s %14s\n", "bytes", "concord us", "concord GB/s", "gloo us", "gloo GB/s");
  }
  std::vector<char> buffer(max_bytes, 1);
  for (size_t bytes = 8; bytes <= max_bytes; bytes *= 8) {
    comm->barrier();
    const double concord_s = one_way_seconds(*comm, over_concord, buffer, bytes, min_seconds);
    comm->barrier();
    const double gloo_s = gloo ? one_way_seconds(*comm, over_gloo, buffer, bytes, min_seconds) : 0.0;
    if (rank == 0) {
      std::printf("  %10zu %14.2f %14.3f", bytes, concord_s * 1e6, bytes / concord_s / 1e9);
      if (gloo) std::printf(" %14.2f %14.3f", gloo_s * 1e6, bytes / gloo_s / 1e9);
      std::printf("\n");
    }
  }
  comm->barrier();
  gloo.reset();
  concord::shutdown();
  return 0;
}
