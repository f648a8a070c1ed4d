#include "transport/rendezvous/file_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/enforce.h"

namespace concord::rendezvous {
namespace {

// Closes a file descriptor (releasing its flock) when it goes out of scope.
struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

FileStore::FileStore(std::string directory) : directory_(std::move(directory)) {
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  CONCORD_ENFORCE(!error && ::access(directory_.c_str(), W_OK) == 0, CommError, "rendezvous: file store directory '",
                  directory_, "' cannot be created or written: ", error ? error.message() : std::strerror(errno));
}

std::string FileStore::path_of(const std::string& key) const {
  std::string name;
  for (const unsigned char c : key) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == '-') {
      name += static_cast<char>(c);
    } else {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02x", c);
      name += escaped;
    }
  }
  return directory_ + "/" + name;
}

void FileStore::set(const std::string& key, const Bytes& value) {
  const std::string path = path_of(key);
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(value.data()), static_cast<std::streamsize>(value.size()));
    CONCORD_ENFORCE(out.good(), CommError, "rendezvous: cannot write key '", key, "' to ", temporary);
  }
  CONCORD_ENFORCE(std::rename(temporary.c_str(), path.c_str()) == 0, CommError, "rendezvous: cannot publish key '", key,
                  "' as ", path, ": ", std::strerror(errno));
}

std::optional<Bytes> FileStore::try_get(const std::string& key) {
  std::ifstream in(path_of(key), std::ios::binary);
  if (!in) return std::nullopt;
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  const std::string lock_path = path_of(key) + ".lock";
  FileDescriptor lock{::open(lock_path.c_str(), O_CREAT | O_RDWR, 0644)};
  CONCORD_ENFORCE(lock.fd >= 0 && ::flock(lock.fd, LOCK_EX) == 0, CommError, "rendezvous: cannot lock ", lock_path,
                  ": ", std::strerror(errno));
  const auto current = try_get(key);
  const int64_t value = (current ? std::stoll(to_string(*current)) : 0) + delta;
  set(key, to_bytes(std::to_string(value)));
  return value;
}

}  // namespace concord::rendezvous
