// Writes the seed corpora of the fuzz targets (fuzz/corpus/<target>/seed_*): valid
// encodings made by Concord's own encoders, so the fuzzer starts from real messages.
// Usage: seed_corpus <corpus-dir>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "control/message.h"
#include "kvstore/key_check.h"
#include "kvstore/key_digest.h"

namespace {

void write(const std::filesystem::path& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint8_t> with_selector(uint8_t selector, std::vector<uint8_t> bytes) {
  bytes.insert(bytes.begin(), selector);
  return bytes;
}

std::vector<uint8_t> text(const std::string& s) { return {s.begin(), s.end()}; }

}  // namespace

int main(int argc, char** argv) {
  using namespace concord;
  if (argc != 2) return 2;
  const std::filesystem::path root = argv[1];

  Request a;
  a.name = "layer1.weight";
  a.shape = {64, 32};
  Request b = a;
  b.rank = 1;
  b.name = "g";
  b.type = CollectiveType::kBroadcast;
  b.root = 1;
  b.group = "layer1.weight";
  b.group_size = 2;
  write(root / "fuzz_control_messages", "seed_requests", with_selector(0, encode(RequestList{{a, b}, false})));
  write(root / "fuzz_control_messages", "seed_shutdown", with_selector(0, encode(RequestList{{}, true})));
  Response r;
  r.names = {"layer1.weight", "layer1.bias"};
  r.sizes = {2048, 32};
  Response e;
  e.type = ResponseType::kError;
  e.names = {"x"};
  e.error = "Mismatched dtype for tensor 'x': float32 on ranks [0], int8 on ranks [1]";
  ResponseList responses;
  responses.responses = {r, e};
  write(root / "fuzz_control_messages", "seed_responses", with_selector(1, encode(responses)));

  kvstore::Verdict verdict;
  verdict.root =
      kvstore::KeyHeader::describe(3, kvstore::KeyOperation::kPush, DataType::kFloat32, {4, 5}, ReduceOp::kSum);
  verdict.bad =
      kvstore::KeyHeader::describe(3, kvstore::KeyOperation::kPush, DataType::kFloat16, {4, 5, 1}, ReduceOp::kMax);
  verdict.bad_rank = 1;
  verdict.num_bad = 1;
  verdict.listed[0] = 1;
  std::vector<uint8_t> bytes(sizeof verdict);
  std::memcpy(bytes.data(), &verdict, sizeof verdict);
  write(root / "fuzz_key_check", "seed_mismatch", bytes);
  verdict.bad.set_problem(kvstore::KeyProblem::kUnknownKey, "key 3 was never initialised on this rank");
  std::memcpy(bytes.data(), &verdict, sizeof verdict);
  write(root / "fuzz_key_check", "seed_problem", bytes);
  // A Verdict followed by a reduced KeyDigest (the push fast path's wire words).
  const kvstore::KeyDigest digest = kvstore::KeyDigest::of(verdict.root, true);
  bytes.resize(sizeof verdict + sizeof digest.words);
  std::memcpy(bytes.data() + sizeof verdict, digest.words.data(), sizeof digest.words);
  write(root / "fuzz_key_check", "seed_digest", bytes);

  // selector 0 (int32 indices), base 10, region length 8, entries (11, 1.5) and (17, -2).
  std::vector<uint8_t> coo(11 + 16);
  const int64_t base = 10;
  const uint16_t length = 8;
  const int32_t indices[2] = {11, 17};
  const float values[2] = {1.5f, -2.0f};
  std::memcpy(coo.data() + 1, &base, 8);
  std::memcpy(coo.data() + 9, &length, 2);
  std::memcpy(coo.data() + 11, indices, 8);
  std::memcpy(coo.data() + 19, values, 8);
  write(root / "fuzz_sparse_wire", "seed_block", coo);

  write(root / "fuzz_cost_model", "seed_calibrated",
        text("{\n  \"alpha\": 2.1e-06,\n  \"beta\": 1.7e-10,\n  \"gamma\": 2.5e-10,\n  \"inter_alpha\": 3e-05,\n"
             "  \"inter_beta\": 8e-10,\n  \"mpi_alpha\": 1e-06,\n  \"mpi_beta\": 5.7e-10\n}\n"));
  write(root / "fuzz_cost_model", "seed_partial", text("{\"alpha\": 1e-6, \"unknown\": [1, 2]}"));

  write(root / "fuzz_timeline_repair", "seed_cut",
        text("[\n{\"name\": \"NEGOTIATE_ALLREDUCE\", \"ph\": \"B\", \"ts\": 10, \"pid\": 0, \"tid\": 1},\n"
             "{\"name\": \"ALLREDUCE\", \"ph\": \"E\", \"ts\": 2"));
  write(root / "fuzz_timeline_repair", "seed_closed",
        text("[\n{\"name\": \"QUEUE\", \"ph\": \"B\", \"ts\": 1, \"pid\": 0, \"tid\": 1},\n]\n"));
  return 0;
}
