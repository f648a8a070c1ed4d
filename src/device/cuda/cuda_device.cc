#include "device/cuda/cuda_device.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <vector>

#include "common/enforce.h"
#include "device/cuda/kernels.h"

namespace concord::cuda {
namespace {

// Throws DeviceError naming `what` and the runtime's error when `error` is not success.
void check(cudaError_t error, const char* what) {
  CONCORD_ENFORCE(error == cudaSuccess, DeviceError, "CUDA ", what, " failed: ", cudaGetErrorName(error), ": ",
                  cudaGetErrorString(error));
}

cudaMemcpyKind memcpy_kind(CopyKind kind) {
  switch (kind) {
    case CopyKind::kHostToDevice: return cudaMemcpyHostToDevice;
    case CopyKind::kDeviceToHost: return cudaMemcpyDeviceToHost;
    case CopyKind::kDeviceToDevice: return cudaMemcpyDeviceToDevice;
  }
  return cudaMemcpyDefault;
}

// Makes `ordinal` current for the calling thread (each runtime thread may differ).
void use(int ordinal) { check(cudaSetDevice(ordinal), "cudaSetDevice"); }

class CudaEvent : public Event {
 public:
  explicit CudaEvent(int ordinal) : ordinal_(ordinal) {
    use(ordinal_);
    check(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreate");
  }
  ~CudaEvent() override { cudaEventDestroy(event_); }
  void synchronize() override { check(cudaEventSynchronize(event_), "cudaEventSynchronize"); }
  bool query() override {
    const cudaError_t status = cudaEventQuery(event_);
    if (status == cudaErrorNotReady) return false;
    check(status, "cudaEventQuery");
    return true;
  }
  cudaEvent_t get() const { return event_; }

 private:
  int ordinal_;
  cudaEvent_t event_ = nullptr;
};

class CudaStream : public Stream {
 public:
  explicit CudaStream(int ordinal) : ordinal_(ordinal) {
    use(ordinal_);
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~CudaStream() override {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  void copy(void* dst, const void* src, size_t bytes, CopyKind kind) override {
    if (bytes == 0) return;
    check(cudaMemcpyAsync(dst, src, bytes, memcpy_kind(kind), stream_), "cudaMemcpyAsync");
  }
  void copy_batch(const std::vector<CopySpan>& spans, CopyKind kind) override {
    if (kind != CopyKind::kDeviceToDevice) {  // host memory: one DMA per span
      for (const CopySpan& span : spans) copy(span.dst, span.src, span.bytes, kind);
      return;
    }
    check(launch_copy_batch(spans.data(), spans.size(), stream_), "batched copy kernel");
  }
  void reduce_into(void* dst, const void* a, const void* src, size_t count, DataType dtype, ReduceOp op) override {
    dtype_size(dtype);  // unknown codes throw InvalidArgument
    check(launch_reduce(dst, a, src, count, dtype, op, stream_), "reduce kernel");
  }
  void scale(void* dst, const void* src, size_t count, DataType dtype, double factor) override {
    dtype_size(dtype);
    check(launch_scale(dst, src, count, dtype, factor, stream_), "scale kernel");
  }
  void record(Event& event) override {
    check(cudaEventRecord(dynamic_cast<CudaEvent&>(event).get(), stream_), "cudaEventRecord");
  }
  void wait(Event& event) override {
    check(cudaStreamWaitEvent(stream_, dynamic_cast<CudaEvent&>(event).get(), 0), "cudaStreamWaitEvent");
  }
  void synchronize() override { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }
  void* cuda_stream() override { return stream_; }

 private:
  int ordinal_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

int usable_devices(std::string& reason) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    reason = std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error);
    cudaGetLastError();  // clear the sticky-free error state of this thread
    return 0;
  }
  if (count == 0) reason = "no CUDA device";
  return count;
}

CudaDevice::CudaDevice(int ordinal) : ordinal_(ordinal) {
  std::string reason;
  const int count = usable_devices(reason);
  CONCORD_ENFORCE(count > 0, DeviceError, "CUDA: no usable device (", reason, ")");
  CONCORD_ENFORCE(ordinal >= 0 && ordinal < count, InvalidArgument, "CUDA device ", ordinal, " does not exist (", count,
                  " device(s))");
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, ordinal), "cudaGetDeviceProperties");
  name_ = "cuda:" + std::to_string(ordinal) + " (" + properties.name + ")";
  char bus[64] = {};
  check(cudaDeviceGetPCIBusId(bus, sizeof bus, ordinal), "cudaDeviceGetPCIBusId");
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  hardware_id_ = std::string(host) + "/" + bus;
}

std::string CudaDevice::name() const { return name_; }

void* CudaDevice::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  use(ordinal_);
  void* data = nullptr;
  check(cudaMalloc(&data, bytes), "cudaMalloc");
  pointers_.notify_alloc({reinterpret_cast<uintptr_t>(data), bytes, ordinal_, 0});
  return data;
}

void CudaDevice::free(void* data) {
  if (data == nullptr) return;
  pointers_.notify_free(data);
  check(cudaFree(data), "cudaFree");
}

void* CudaDevice::allocate_host(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* data = nullptr;
  check(cudaMallocHost(&data, bytes), "cudaMallocHost");
  return data;
}

void CudaDevice::free_host(void* data) {
  if (data != nullptr) check(cudaFreeHost(data), "cudaFreeHost");
}

bool CudaDevice::is_device_pointer(const void* data) const {
  try {
    return pointers_.lookup(data).is_device();
  } catch (const DeviceError&) {
    return false;  // the driver could not tell: treat as host memory (never dereferenced here)
  }
}

std::unique_ptr<Stream> CudaDevice::create_stream() { return std::make_unique<CudaStream>(ordinal_); }

std::unique_ptr<Event> CudaDevice::create_event() { return std::make_unique<CudaEvent>(ordinal_); }

}  // namespace concord::cuda
