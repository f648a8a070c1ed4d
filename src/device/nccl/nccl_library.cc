// nccl::library() of a build with NCCL (nccl.h and libnccl found by cmake/ConcordCuda.cmake):
// libnccl.so.2 is dlopen'ed on first use -- no link dependency, so every binary starts
// where it is missing -- and its functions are called through the nccl::Api interface.
// nccl.h is included only to check that nccl_api.h's values are NCCL's.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <cstring>
#include <mutex>

#include "common/enforce.h"
#include "device/device_error.h"
#include "device/nccl/nccl_api.h"

namespace concord::nccl {
namespace {

static_assert(static_cast<int>(Type::kInt8) == ncclInt8 && static_cast<int>(Type::kUint8) == ncclUint8 &&
              static_cast<int>(Type::kInt32) == ncclInt32 && static_cast<int>(Type::kUint32) == ncclUint32 &&
              static_cast<int>(Type::kInt64) == ncclInt64 && static_cast<int>(Type::kUint64) == ncclUint64 &&
              static_cast<int>(Type::kFloat16) == ncclFloat16 && static_cast<int>(Type::kFloat32) == ncclFloat32 &&
              static_cast<int>(Type::kFloat64) == ncclFloat64 && static_cast<int>(Type::kBfloat16) == ncclBfloat16);
static_assert(static_cast<int>(Op::kSum) == ncclSum && static_cast<int>(Op::kProd) == ncclProd &&
              static_cast<int>(Op::kMax) == ncclMax && static_cast<int>(Op::kMin) == ncclMin &&
              static_cast<int>(Op::kAvg) == ncclAvg);
static_assert(sizeof(UniqueId) == sizeof(ncclUniqueId));

class Library : public Api {
 public:
  // Loads the library; `reason` says what was loaded or why not (then loaded() is false).
  explicit Library(std::string& reason) {
    for (const char* path : {"libnccl.so.2", CONCORD_NCCL_LIBRARY_PATH}) {
      handle_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (handle_ != nullptr) {
        reason = path;
        break;
      }
      reason += std::string(reason.empty() ? "" : "; ") + dlerror();
    }
    if (handle_ == nullptr) return;
    const bool all = bind(get_version_, "ncclGetVersion") && bind(get_unique_id_, "ncclGetUniqueId") &&
                     bind(comm_init_rank_, "ncclCommInitRank") && bind(all_reduce_, "ncclAllReduce") &&
                     bind(comm_destroy_, "ncclCommDestroy") && bind(get_error_string_, "ncclGetErrorString");
    if (!all) {
      reason = std::string("missing symbol in ") + reason + ": " + missing_;
      dlclose(handle_);
      handle_ = nullptr;
    }
  }
  bool loaded() const { return handle_ != nullptr; }

  int version() override {
    int code = 0;
    check(get_version_(&code), "ncclGetVersion");
    return code;
  }
  UniqueId unique_id() override {
    ncclUniqueId id;
    check(get_unique_id_(&id), "ncclGetUniqueId");
    UniqueId out;
    std::memcpy(out.bytes, id.internal, sizeof out.bytes);
    return out;
  }
  Comm init_rank(int nranks, const UniqueId& id, int rank, int cuda_ordinal) override {
    const cudaError_t set = cudaSetDevice(cuda_ordinal);
    CONCORD_ENFORCE(set == cudaSuccess, DeviceError, "cudaSetDevice(", cuda_ordinal,
                    ") failed: ", cudaGetErrorString(set));
    ncclUniqueId nccl_id;
    std::memcpy(nccl_id.internal, id.bytes, sizeof nccl_id.internal);
    ncclComm_t comm = nullptr;
    check(comm_init_rank_(&comm, nranks, nccl_id, rank), "ncclCommInitRank");
    return comm;
  }
  void all_reduce(const void* send, void* recv, size_t count, Type type, Op op, Comm comm, void* stream) override {
    check(all_reduce_(send, recv, count, static_cast<ncclDataType_t>(type), static_cast<ncclRedOp_t>(op),
                      static_cast<ncclComm_t>(comm), static_cast<cudaStream_t>(stream)),
          "ncclAllReduce");
  }
  void destroy(Comm comm) noexcept override {
    if (comm != nullptr) comm_destroy_(static_cast<ncclComm_t>(comm));
  }

 private:
  template <typename Function>
  bool bind(Function*& function, const char* name) {
    function = reinterpret_cast<Function*>(dlsym(handle_, name));
    if (function == nullptr) missing_ = name;
    return function != nullptr;
  }
  void check(ncclResult_t result, const char* what) {
    CONCORD_ENFORCE(result == ncclSuccess, DeviceError, what, " failed: ", get_error_string_(result));
  }

  void* handle_ = nullptr;
  std::string missing_;
  decltype(ncclGetVersion)* get_version_ = nullptr;
  decltype(ncclGetUniqueId)* get_unique_id_ = nullptr;
  decltype(ncclCommInitRank)* comm_init_rank_ = nullptr;
  decltype(ncclAllReduce)* all_reduce_ = nullptr;
  decltype(ncclCommDestroy)* comm_destroy_ = nullptr;
  decltype(ncclGetErrorString)* get_error_string_ = nullptr;
};

}  // namespace

Api* library(Status* status) {
  static std::once_flag once;
  static Library* loaded = nullptr;  // process-wide, like the dlopen handle it wraps
  static Status result;
  std::call_once(once, [] {
    result.built = true;
    std::string reason;
    auto* candidate = new Library(reason);
    result.reason = reason;
    if (candidate->loaded()) {
      loaded = candidate;
      result.loaded = true;
      try {
        result.version = loaded->version();
      } catch (const std::exception& e) {
        result.reason += std::string(", ") + e.what();
      }
    } else {
      delete candidate;
    }
  });
  if (status != nullptr) *status = result;
  return loaded;
}

}  // namespace concord::nccl
