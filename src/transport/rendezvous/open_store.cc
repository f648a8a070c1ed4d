#include "transport/rendezvous/open_store.h"

#include "common/enforce.h"
#include "transport/rendezvous/file_store.h"

namespace concord::rendezvous {

OpenStore open_store(const LaunchEnvironment& env, const std::string& spec_in, std::chrono::milliseconds timeout) {
  std::string spec = spec_in;
  if (spec.empty()) {
    CONCORD_ENFORCE(!env.master_addr.empty() && env.master_port > 0, StateError, "Concord (", env.describe(),
                    ") must rendezvous with its peers but nothing says where: set CONCORD_STORE=file:DIR (one "
                    "host) or tcp:HOST:PORT, or MASTER_ADDR and MASTER_PORT (torchrun sets them)");
    spec = "tcp:" + env.master_addr + ":" + std::to_string(env.master_port + 1);
  }
  OpenStore result;
  if (spec.rfind("file:", 0) == 0) {
    result.store = std::make_unique<FileStore>(spec.substr(5));
    return result;
  }
  const bool served_elsewhere = spec.rfind("tcp-client:", 0) == 0;
  const size_t scheme = served_elsewhere ? 11 : 4;
  const auto colon = spec.rfind(':');
  CONCORD_ENFORCE((served_elsewhere || spec.rfind("tcp:", 0) == 0) && colon > scheme, InvalidArgument,
                  "CONCORD_STORE='", spec_in, "': expected file:DIR, tcp:HOST:PORT or tcp-client:HOST:PORT");
  const std::string host = spec.substr(scheme, colon - scheme);
  int port = 0;
  try {
    port = std::stoi(spec.substr(colon + 1));
  } catch (const std::exception&) {
  }
  CONCORD_ENFORCE(port > 0 && port < 65536, InvalidArgument, "CONCORD_STORE='", spec, "': bad port");
  if (env.rank == 0 && !served_elsewhere) result.server = std::make_unique<TcpStoreServer>(port);
  result.store = std::make_unique<TcpStore>(host, port, timeout);
  return result;
}

}  // namespace concord::rendezvous
