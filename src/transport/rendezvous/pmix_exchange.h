// The UCX world's address exchange through the launcher's PMIx server (the PMIx Standard's
// put / commit / fence / get, Open MPI's mpirun and Slurm's srun --mpi=pmix provide one to
// their ranks), instead of a key-value store: every rank puts its framed address
// (address_frame.h) under one key, a fence that collects the data completes once every rank
// of the job has put and committed, then each rank gets the others'. PMIx assigns the ranks,
// so nothing is claimed or counted as in the store's protocol (world_rendezvous.h). Built
// when CMake finds PMIx (CONCORD_WITH_PMIX, cmake/ConcordPmix.cmake); otherwise
// pmix_available() is false and exchange_addresses_pmix() throws.
#pragma once

#include <string>
#include <vector>

#include "transport/rendezvous/world_rendezvous.h"

namespace concord::rendezvous {

/// True when this build has the PMIx rendezvous.
bool pmix_available();

/// Every rank's PeerAddress in rank order (`mine` at options.rank), exchanged through the
/// PMIx server of the launcher that started this process (PMIX_NAMESPACE, PMIX_RANK and the
/// server's URI in the environment). Collective over the job's `options.size` processes.
/// Throws CommError, naming the PMIx call and status or the rank, when PMIx_Init fails (no
/// server), PMIx's rank or job size differ from `options` (world-size disagreement), the
/// fence does not complete before options.deadline (a rank that did not start, crashed, or
/// runs another transport), or a rank's value is missing or does not unframe; StateError in
/// a build without PMIx.
std::vector<PeerAddress> exchange_addresses_pmix(const RendezvousOptions& options, const PeerAddress& mine);

}  // namespace concord::rendezvous
