// A rendezvous store in a directory that every rank can read and write: ranks on one host
// (concord-run's local mode) or on hosts sharing a file system. One file per key, written
// to a temporary name and renamed into place, so a reader sees a whole value or none;
// add() holds an flock(2) on the key's lock file around its read-modify-write.
#pragma once

#include <string>

#include "transport/rendezvous/store.h"

namespace concord::rendezvous {

class FileStore : public Store {
 public:
  /// The store in `directory` (created if missing). Throws CommError when it cannot be
  /// created or is not writable.
  explicit FileStore(std::string directory);

  void set(const std::string& key, const Bytes& value) override;
  std::optional<Bytes> try_get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::string describe() const override { return "file:" + directory_; }

 private:
  // The file holding `key`: its characters other than [A-Za-z0-9._-] hex-escaped, so keys
  // with '/' stay in the directory.
  std::string path_of(const std::string& key) const;

  std::string directory_;
};

}  // namespace concord::rendezvous
