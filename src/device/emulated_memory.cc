#include "device/emulated_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/enforce.h"
#include "device/device_error.h"

namespace concord {

EmulatedMemory::~EmulatedMemory() {
  for (const auto& [base, mapping] : mappings_) {
    munmap(reinterpret_cast<void*>(base), mapping.mapped);
    munmap(mapping.rw, mapping.mapped);
  }
}

void* EmulatedMemory::allocate(size_t bytes) {
  CONCORD_ENFORCE(bytes > 0, InternalError, "EmulatedMemory::allocate of 0 bytes");
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t mapped = (bytes + page - 1) / page * page;
  const int fd = memfd_create("concord-emulated-device", MFD_CLOEXEC);
  CONCORD_ENFORCE(fd >= 0, DeviceError, "emulated device: memfd_create failed: ", std::strerror(errno));
  if (ftruncate(fd, static_cast<off_t>(mapped)) != 0) {
    const int error = errno;
    close(fd);
    CONCORD_THROW(DeviceError, "emulated device: cannot allocate ", bytes, " bytes: ", std::strerror(error));
  }
  void* rw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  void* guarded = rw == MAP_FAILED ? MAP_FAILED : mmap(nullptr, mapped, PROT_NONE, MAP_SHARED, fd, 0);
  const int error = errno;
  close(fd);  // the mappings keep the memory alive
  if (guarded == MAP_FAILED) {
    if (rw != MAP_FAILED) munmap(rw, mapped);
    CONCORD_THROW(DeviceError, "emulated device: mmap of ", bytes, " bytes failed: ", std::strerror(error));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  mappings_[reinterpret_cast<uintptr_t>(guarded)] = Mapping{bytes, mapped, static_cast<uint8_t*>(rw)};
  return guarded;
}

void EmulatedMemory::free(void* data) {
  Mapping mapping;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = mappings_.find(reinterpret_cast<uintptr_t>(data));
    CONCORD_ENFORCE(it != mappings_.end(), InvalidArgument, "emulated device: free of ", data,
                    ", which is not the start of a device allocation");
    mapping = it->second;
    mappings_.erase(it);
  }
  munmap(data, mapping.mapped);
  munmap(mapping.rw, mapping.mapped);
}

std::map<uintptr_t, EmulatedMemory::Mapping>::const_iterator EmulatedMemory::find(uintptr_t address) const {
  auto it = mappings_.upper_bound(address);
  if (it == mappings_.begin()) return mappings_.end();
  --it;
  return address <= it->first + it->second.bytes ? it : mappings_.end();
}

void* EmulatedMemory::translate(const void* data) const {
  const auto address = reinterpret_cast<uintptr_t>(data);
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = find(address);
  if (it == mappings_.end()) return const_cast<void*>(data);
  return it->second.rw + (address - it->first);
}

bool EmulatedMemory::contains(const void* data) const { return allocation(data).bytes > 0; }

EmulatedMemory::Range EmulatedMemory::allocation(const void* data) const {
  const auto address = reinterpret_cast<uintptr_t>(data);
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = find(address);
  if (it == mappings_.end() || address >= it->first + it->second.bytes) return {};
  return {it->first, it->second.bytes};
}

}  // namespace concord
