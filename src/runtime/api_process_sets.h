// The running process-wide runtime's process sets (src/runtime/api.cc), for the Python
// binding's point-to-point channel of a torch.distributed group (python/bind_p2p.cc). Not
// part of the installed API.
#pragma once

#include <memory>

#include "transport/communicator.h"

namespace concord {

/// The point-to-point communicator of process set `id` (a set formed by its members with
/// form_process_set, on a member): its ranks are the set's. Valid while the caller holds
/// it, also after the set is removed. Throws StateError before init(), InvalidArgument for
/// an unknown set, a set this rank is not in, or one formed otherwise (add_process_set,
/// or a transport without members-only communicators).
std::shared_ptr<Communicator> process_set_p2p(int id);

}  // namespace concord
