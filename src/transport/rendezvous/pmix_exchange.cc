#include "transport/rendezvous/pmix_exchange.h"

#include <pmix.h>

#include <condition_variable>
#include <memory>
#include <mutex>

#include "common/enforce.h"

namespace concord::rendezvous {
namespace {

std::string where(const pmix_proc_t& me) { return "PMIx (namespace " + std::string(me.nspace) + ")"; }

void check_pmix(pmix_status_t status, const char* call, const std::string& context) {
  CONCORD_ENFORCE(status == PMIX_SUCCESS, CommError, "rendezvous through ", context, " failed: ", call, ": ",
                  PMIx_Error_string(status));
}

// A nonblocking fence's completion, shared with PMIx's callback thread; the callback may run
// after a timed-out waiter has gone, so it holds its own reference.
struct FenceState {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  pmix_status_t status = PMIX_SUCCESS;
};

void fence_done(pmix_status_t status, void* cbdata) {
  auto* state = static_cast<std::shared_ptr<FenceState>*>(cbdata);
  {
    std::lock_guard<std::mutex> lock((*state)->mutex);
    (*state)->done = true;
    (*state)->status = status;
  }
  (*state)->done_cv.notify_all();
  delete state;
}

// Fences every process of `me`'s namespace, collecting the data they put, before `deadline`.
void fence(const pmix_proc_t& me, const RendezvousOptions& options) {
  const auto state = std::make_shared<FenceState>();
  pmix_info_t info;
  PMIX_INFO_CONSTRUCT(&info);
  const bool collect = true;
  PMIx_Info_load(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
  auto* callback_ref = new std::shared_ptr<FenceState>(state);
  const pmix_status_t started = PMIx_Fence_nb(nullptr, 0, &info, 1, fence_done, callback_ref);
  PMIX_INFO_DESTRUCT(&info);
  if (started != PMIX_SUCCESS) {
    delete callback_ref;
    check_pmix(started, "PMIx_Fence_nb", where(me));
  }
  std::unique_lock<std::mutex> lock(state->mutex);
  const bool completed = state->done_cv.wait_until(lock, options.deadline, [&] { return state->done; });
  CONCORD_ENFORCE(completed, CommError, "rendezvous through ", where(me), " failed: the fence of all ", options.size,
                  " ranks did not complete in time (rank ", options.rank,
                  " waited; a rank that did not start, crashed, or runs another transport than "
                  "CONCORD_TRANSPORT=ucx; CONCORD_INIT_TIMEOUT)");
  check_pmix(state->status, "PMIx_Fence_nb", where(me));
}

uint32_t job_size(const pmix_proc_t& me) {
  pmix_proc_t job;
  PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
  pmix_value_t* value = nullptr;
  check_pmix(PMIx_Get(&job, PMIX_JOB_SIZE, nullptr, 0, &value), "PMIx_Get(" PMIX_JOB_SIZE ")", where(me));
  const uint32_t size = value->type == PMIX_UINT32 ? value->data.uint32 : 0;
  PMIX_VALUE_RELEASE(value);
  return size;
}

}  // namespace

bool pmix_available() { return true; }

std::vector<PeerAddress> exchange_addresses_pmix(const RendezvousOptions& options, const PeerAddress& mine) {
  pmix_proc_t me;
  PMIX_PROC_CONSTRUCT(&me);
  check_pmix(PMIx_Init(&me, nullptr, 0), "PMIx_Init", "PMIx (no PMIx server reachable from this process?)");
  // Finalized on every way out but a timed-out fence (still pending in PMIx): Open MPI's
  // mpirun reports a rank that initialised PMIx and exited without finalising as failed.
  bool fence_pending = false;
  const auto finalize = [&] {
    if (!fence_pending) PMIx_Finalize(nullptr, 0);
  };
  try {
    CONCORD_ENFORCE(static_cast<int64_t>(me.rank) == options.rank, CommError, "rendezvous through ", where(me),
                    " failed: PMIx says this process is rank ", me.rank, ", the launcher's variables say rank ",
                    options.rank);
    const uint32_t size = job_size(me);
    CONCORD_ENFORCE(static_cast<int64_t>(size) == options.size, CommError, "rendezvous through ", where(me),
                    " failed: world size disagreement: PMIx's job has ", size, " ranks, rank ", options.rank,
                    " was told ", options.size);
    const std::string key = "concord.addr." + options.run_id;
    const std::vector<uint8_t> frame = frame_address(mine);
    pmix_byte_object_t bytes{const_cast<char*>(reinterpret_cast<const char*>(frame.data())), frame.size()};
    pmix_value_t value;
    PMIX_VALUE_CONSTRUCT(&value);
    PMIx_Value_load(&value, &bytes, PMIX_BYTE_OBJECT);
    const pmix_status_t put = PMIx_Put(PMIX_GLOBAL, key.c_str(), &value);
    PMIX_VALUE_DESTRUCT(&value);
    check_pmix(put, "PMIx_Put", where(me));
    check_pmix(PMIx_Commit(), "PMIx_Commit", where(me));
    fence_pending = true;
    fence(me, options);
    fence_pending = false;
    std::vector<PeerAddress> peers(options.size);
    for (int r = 0; r < options.size; ++r) {
      pmix_proc_t peer;
      PMIX_LOAD_PROCID(&peer, me.nspace, static_cast<pmix_rank_t>(r));
      pmix_value_t* got = nullptr;
      const pmix_status_t status = PMIx_Get(&peer, key.c_str(), nullptr, 0, &got);
      CONCORD_ENFORCE(status == PMIX_SUCCESS && got->type == PMIX_BYTE_OBJECT, CommError, "rendezvous through ",
                      where(me), " failed: rank ", r, "'s address (key ", key,
                      ") is missing: ", status == PMIX_SUCCESS ? "not a byte object" : PMIx_Error_string(status));
      const auto* data = reinterpret_cast<const uint8_t*>(got->data.bo.bytes);
      const std::vector<uint8_t> received(data, data + got->data.bo.size);
      PMIX_VALUE_RELEASE(got);
      peers[r] = unframe_address(received, r);
    }
    finalize();
    return peers;
  } catch (...) {
    finalize();
    throw;
  }
}

}  // namespace concord::rendezvous
