#include "transport/mpi_communicator.h"

#include "common/backoff.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>

#include "common/enforce.h"
#include "transport/message_split.h"

namespace concord {
namespace {

// MPI counts are ints: messages above this are split into several MPI requests
// (max_message_bytes(), transport/message_split.h).
constexpr size_t kMaxMessageBytes = size_t{1} << 30;

// One MPI_Isend or MPI_Irecv (a piece of a message: transport/message_split.h). A receive
// checks the matched message's length (MPI accepts a shorter one silently and fails a
// longer one with MPI_ERR_TRUNCATE) and reports its sender through `source`.
class MpiRequest : public TransportRequest {
 public:
  MPI_Request request = MPI_REQUEST_NULL;
  bool receive = false;
  size_t bytes = 0;
  int peer = -1;  // -1: any source
  int tag = 0;
  int* source = nullptr;

  bool test() override {
    if (request == MPI_REQUEST_NULL) return true;
    int flag = 0;
    if (!receive) {
      check_mpi(MPI_Test(&request, &flag, MPI_STATUS_IGNORE), "MPI_Test");
      return flag != 0;
    }
    MPI_Status status;
    const int code = MPI_Test(&request, &flag, &status);
    const std::string from = peer >= 0 ? "rank " + std::to_string(peer) : std::string("any rank");
    int error_class = MPI_SUCCESS;
    if (code != MPI_SUCCESS) MPI_Error_class(code, &error_class);
    CONCORD_ENFORCE(error_class != MPI_ERR_TRUNCATE, CommError, "MPI receive of ", bytes, " bytes from ", from,
                    " (tag ", tag, ") matched a longer message");
    check_mpi(code, "MPI_Test");
    if (!flag) return false;
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    CONCORD_ENFORCE(static_cast<size_t>(count) == bytes, CommError, "MPI receive of ", bytes, " bytes from rank ",
                    status.MPI_SOURCE, " (tag ", tag, ") matched a message of ", count, " bytes");
    if (source) *source = status.MPI_SOURCE;
    return true;
  }
  ~MpiRequest() override {
    if (request == MPI_REQUEST_NULL) return;
    if (receive) {  // abandoned (an exception, a timed-out wait): MPI must not write into a buffer about to be freed
      MPI_Cancel(&request);
      MPI_Wait(&request, MPI_STATUS_IGNORE);
    } else {
      MPI_Request_free(&request);
    }
  }
};

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

void check_mpi(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  CONCORD_THROW(CommError, what, " failed: ", std::string(text, length));
}

void ensure_mpi_initialized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  CONCORD_ENFORCE(!finalized, StateError, "MPI has already been finalized in this process; Concord cannot start");
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
    std::atexit(finalize_at_exit);
  } else {
    MPI_Query_thread(&provided);
  }
  CONCORD_ENFORCE(provided >= MPI_THREAD_SERIALIZED, StateError, "MPI provides thread level ", provided,
                  " but Concord's background thread needs MPI_THREAD_SERIALIZED (", MPI_THREAD_SERIALIZED,
                  ") or higher; initialise MPI with MPI_Init_thread");
}

MPI_Comm duplicate(MPI_Comm parent) {
  MPI_Comm comm = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(parent, &comm), "MPI_Comm_dup");
  return comm;
}

MpiCommunicator::MpiCommunicator(MPI_Comm parent) : MpiCommunicator(duplicate(parent), Adopt{}) {}

MpiCommunicator::MpiCommunicator(MPI_Comm comm, Adopt) : comm_(comm) {
  std::fill(&user_ops_[0][0], &user_ops_[0][0] + sizeof user_ops_ / sizeof(MPI_Op), MPI_OP_NULL);
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  set_max_message_bytes(kMaxMessageBytes);
  cuda_support_ = mpi_cuda_support();
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (auto& row : user_ops_)
    for (auto& op : row)
      if (op != MPI_OP_NULL) MPI_Op_free(&op);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  MPI_Comm sub = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &sub), "MPI_Comm_split");
  if (sub == MPI_COMM_NULL) return nullptr;
  std::unique_ptr<MpiCommunicator> result(new MpiCommunicator(sub, Adopt{}));
  adopt(*result);
  return result;
}

RequestPtr MpiCommunicator::isend(const void* data, size_t bytes, int peer, int tag) {
  const char* p = static_cast<const char*>(data);
  auto request = post_in_pieces(bytes, std::min<size_t>(max_message_bytes(), INT_MAX), [&](size_t offset, size_t n) {
    auto piece = std::make_unique<MpiRequest>();
    check_mpi(MPI_Isend(p + offset, static_cast<int>(n), MPI_BYTE, peer, tag, comm_, &piece->request), "MPI_Isend");
    return RequestPtr(std::move(piece));
  });
  record_sent(bytes);
  return request;
}

RequestPtr MpiCommunicator::irecv(void* data, size_t bytes, int peer, int tag) {
  char* p = static_cast<char*>(data);
  auto request = post_in_pieces(bytes, std::min<size_t>(max_message_bytes(), INT_MAX), [&](size_t offset, size_t n) {
    auto piece = std::make_unique<MpiRequest>();
    piece->receive = true;
    piece->bytes = n;
    piece->peer = peer;
    piece->tag = tag;
    check_mpi(MPI_Irecv(p + offset, static_cast<int>(n), MPI_BYTE, peer, tag, comm_, &piece->request), "MPI_Irecv");
    return RequestPtr(std::move(piece));
  });
  record_received(bytes);
  return request;
}

RequestPtr MpiCommunicator::irecv_any_source(void* data, size_t bytes, int tag, int* source) {
  const size_t limit = std::min<size_t>(max_message_bytes(), INT_MAX);
  CONCORD_ENFORCE(bytes <= limit, InvalidArgument, "MPI receive from any rank of ", bytes, " bytes (tag ", tag,
                  "): above the ", limit, " bytes MPI matches in one message; receive from a named rank");
  auto request = std::make_unique<MpiRequest>();
  request->receive = true;
  request->bytes = bytes;
  request->tag = tag;
  request->source = source;
  check_mpi(MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, MPI_ANY_SOURCE, tag, comm_, &request->request),
            "MPI_Irecv");
  record_received(bytes);
  return request;
}

void MpiCommunicator::wait_polling(MPI_Request& request, const char* what) {
  Backoff backoff;
  int done = 0;
  while (true) {
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    backoff.wait();
  }
}

std::vector<std::vector<uint8_t>> MpiCommunicator::gather_bytes(const std::vector<uint8_t>& mine, int root) {
  CONCORD_ENFORCE(mine.size() <= INT_MAX, InvalidArgument, "control message of ", mine.size(), " bytes is too large");
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(rank_ == root ? size_ : 0);
  MPI_Request request;
  check_mpi(MPI_Igather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, root, comm_, &request), "MPI_Igather");
  wait_polling(request, "MPI_Igather");
  std::vector<int> displacements(lengths.size());
  std::vector<uint8_t> all;
  if (rank_ == root) {
    size_t total = 0;
    for (int r = 0; r < size_; ++r) {
      displacements[r] = static_cast<int>(total);
      total += lengths[r];
    }
    all.resize(total);
  }
  check_mpi(MPI_Igatherv(mine.data(), length, MPI_BYTE, all.data(), lengths.data(), displacements.data(), MPI_BYTE,
                         root, comm_, &request),
            "MPI_Igatherv");
  wait_polling(request, "MPI_Igatherv");
  record_sent(rank_ == root ? 0 : mine.size() + sizeof(int), 0);
  record_received(all.size() + lengths.size() * sizeof(int), 0);
  std::vector<std::vector<uint8_t>> result;
  for (size_t r = 0; r < lengths.size(); ++r)
    result.emplace_back(all.begin() + displacements[r], all.begin() + displacements[r] + lengths[r]);
  return result;
}

void MpiCommunicator::broadcast_bytes(std::vector<uint8_t>& data, int root) {
  CONCORD_ENFORCE(data.size() <= INT_MAX, InvalidArgument, "control message of ", data.size(), " bytes is too large");
  int length = static_cast<int>(data.size());
  MPI_Request request;
  check_mpi(MPI_Ibcast(&length, 1, MPI_INT, root, comm_, &request), "MPI_Ibcast");
  wait_polling(request, "MPI_Ibcast");
  data.resize(length);
  check_mpi(MPI_Ibcast(data.data(), length, MPI_BYTE, root, comm_, &request), "MPI_Ibcast");
  wait_polling(request, "MPI_Ibcast");
  if (rank_ == root) {
    record_sent((data.size() + sizeof(int)) * (size_ - 1), 0);
  } else {
    record_received(data.size() + sizeof(int), 0);
  }
}

void MpiCommunicator::barrier() {
  MPI_Request request;
  check_mpi(MPI_Ibarrier(comm_, &request), "MPI_Ibarrier");
  wait_polling(request, "MPI_Ibarrier");
}

void MpiCommunicator::allreduce_bits(std::vector<uint64_t>& words, bool bitwise_and) {
  MPI_Request request;
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, words.data(), static_cast<int>(words.size()), MPI_UINT64_T,
                           bitwise_and ? MPI_BAND : MPI_BOR, comm_, &request),
            "MPI_Iallreduce (bit vector)");
  wait_polling(request, "MPI_Iallreduce (bit vector)");
  // Counted as one vector each way: what a rank contributes and what it gets back.
  record_sent(words.size() * sizeof(uint64_t), 0);
  record_received(words.size() * sizeof(uint64_t), 0);
}

std::vector<int> node_of_every_rank(MPI_Comm world, MPI_Comm local) {
  int world_rank = 0, size = 0;
  MPI_Comm_rank(world, &world_rank);
  MPI_Comm_size(world, &size);
  int leader = world_rank;  // world rank of this node's local rank 0
  check_mpi(MPI_Bcast(&leader, 1, MPI_INT, 0, local), "MPI_Bcast");
  std::vector<int> leaders(size);
  check_mpi(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, world), "MPI_Allgather");
  std::vector<int> nodes(size);
  std::vector<int> seen;
  for (int r = 0; r < size; ++r) {
    const auto it = std::find(seen.begin(), seen.end(), leaders[r]);
    nodes[r] = static_cast<int>(it - seen.begin());
    if (it == seen.end()) seen.push_back(leaders[r]);
  }
  return nodes;
}

std::vector<int> node_of_every_rank(MPI_Comm world) {
  MPI_Comm local = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local), "MPI_Comm_split_type");
  std::vector<int> nodes;
  try {
    nodes = node_of_every_rank(world, local);
  } catch (...) {
    MPI_Comm_free(&local);
    throw;
  }
  MPI_Comm_free(&local);
  return nodes;
}

CommunicatorSet mpi_communicator_set() {
  ensure_mpi_initialized();
  CommunicatorSet set;
  set.control = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD);
  set.data = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD);
  set.node_of_rank = node_of_every_rank(MPI_COMM_WORLD);
  int thread_level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&thread_level);
  set.threads_supported = thread_level >= MPI_THREAD_MULTIPLE;
  return set;
}

}  // namespace concord
