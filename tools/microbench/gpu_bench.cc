// concord-gpubench: the device layer's benchmarks on a GPU (scripts/gpu_check.sh writes
// their output for docs/performance.md). Needs no MPI (links concord_device only).
//   kernels: reduce (sum) GB/s of the CUDA kernels vs the CPU kernels (common/reduce.h)
//            at -s bytes (default 64 MiB) per dtype; GB/s counts the bytes read and
//            written (3 x size), as kernelbench does. The goal is >= 5x the CPU.
//   pointer: ns per PointerCache::lookup hit vs one cuPointerGetAttributes (the driver
//            query the cache saves; goal >= 10x faster).
// Without a usable GPU it prints the CUDA status line and exits 0 (nothing measured).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <vector>

#include "common/reduce.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/driver_api.h"
#include "device/cuda_status.h"
#include "device/pointer_cache.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void bench_kernels(concord::cuda::CudaDevice& device, size_t bytes, int iterations) {
  using namespace concord;
  std::printf("# kernels: reduce sum, %zu bytes, %d iterations; GB/s = 3 x bytes / time\n", bytes, iterations);
  std::printf("%-10s %12s %12s %8s\n", "dtype", "gpu_GB/s", "cpu_GB/s", "ratio");
  auto stream = device.create_stream();
  for (DataType dtype :
       {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64, DataType::kInt32}) {
    const size_t count = bytes / dtype_size(dtype);
    std::vector<uint8_t> a(count * dtype_size(dtype), 1), b(a.size(), 2);
    DeviceBuffer da(device, a.size()), db(device, b.size());
    stream->copy(da.data(), a.data(), a.size(), CopyKind::kHostToDevice);
    stream->copy(db.data(), b.data(), b.size(), CopyKind::kHostToDevice);
    stream->reduce(da.data(), db.data(), count, dtype, ReduceOp::kSum);  // warm-up
    stream->synchronize();
    auto start = Clock::now();
    for (int i = 0; i < iterations; ++i) stream->reduce(da.data(), db.data(), count, dtype, ReduceOp::kSum);
    stream->synchronize();
    const double gpu = 3.0 * a.size() * iterations / seconds_since(start) / 1e9;
    reduce_inplace(a.data(), b.data(), count, dtype, ReduceOp::kSum);  // warm-up
    start = Clock::now();
    for (int i = 0; i < iterations; ++i) reduce_inplace(a.data(), b.data(), count, dtype, ReduceOp::kSum);
    const double cpu = 3.0 * a.size() * iterations / seconds_since(start) / 1e9;
    std::printf("%-10s %12.1f %12.1f %8.1f\n", dtype_name(dtype), gpu, cpu, gpu / cpu);
  }
}

void bench_pointer_cache(concord::cuda::CudaDevice& device, int iterations) {
  using namespace concord;
  cuda::DriverAttributeProvider driver;
  PointerCache cache(driver);
  DeviceBuffer buffer(device, size_t{1} << 20);
  const auto* base = static_cast<const uint8_t*>(buffer.data());
  cache.lookup(base);
  int devices = 0;
  auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) devices += cache.lookup(base + (i & 4095)).device;
  const double hit = seconds_since(start) / iterations * 1e9;
  start = Clock::now();
  for (int i = 0; i < iterations; ++i) devices += driver.query(base + (i & 4095))->device;
  const double query = seconds_since(start) / iterations * 1e9;
  std::printf("# pointer cache: %d lookups of a cudaMalloc'd buffer (checksum %d)\n", iterations, devices);
  std::printf("cache_hit_ns %.1f driver_query_ns %.1f ratio %.1f hits %llu misses %llu\n", hit, query, query / hit,
              static_cast<unsigned long long>(cache.hits()), static_cast<unsigned long long>(cache.misses()));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"concord-gpubench: CUDA kernels and pointer cache (docs/performance.md)"};
  size_t bytes = size_t{64} << 20;
  int iterations = 20;
  int lookups = 1000000;
  app.add_option("-s,--size", bytes, "bytes per kernel operand");
  app.add_option("-n,--iterations", iterations, "kernel iterations");
  app.add_option("-l,--lookups", lookups, "pointer-cache lookups");
  CLI11_PARSE(app, argc, argv);
  const concord::CudaStatus status = concord::cuda_status();
  std::printf("%s\n", status.summary().c_str());
  if (status.devices == 0) return 0;
  concord::cuda::CudaDevice device(0);
  std::printf("device %s\n", device.name().c_str());
  bench_kernels(device, bytes, iterations);
  bench_pointer_cache(device, lookups);
  return 0;
}
