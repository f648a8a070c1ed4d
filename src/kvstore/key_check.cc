#include "kvstore/key_check.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "common/enforce.h"

namespace concord::kvstore {
namespace {

const char* operation_name(int32_t operation) {
  return operation == static_cast<int32_t>(KeyOperation::kInit) ? "init" : "push";
}

// "push of key 3 (float32 [4, 5], sum)"
std::string describe_request(const KeyHeader& header) {
  std::ostringstream out;
  out << operation_name(header.operation) << " of key " << header.key << " ("
      << dtype_name(static_cast<DataType>(header.dtype)) << " [";
  const int shown = std::min<int>(header.ndim, KeyHeader::kMaxDims);
  for (int i = 0; i < shown; ++i) out << (i ? ", " : "") << header.dims[i];
  if (header.ndim > shown) out << ", ...";
  out << "]";
  if (header.operation == static_cast<int32_t>(KeyOperation::kPush))
    out << ", " << reduce_op_name(static_cast<ReduceOp>(header.op));
  out << ")";
  return out.str();
}

// What differs between two requests, e.g. "key and shape differ".
std::string differences(const KeyHeader& a, const KeyHeader& b) {
  std::vector<std::string> parts;
  if (a.operation != b.operation) parts.push_back("operation");
  if (a.key != b.key) parts.push_back("key");
  if (a.dtype != b.dtype) parts.push_back("dtype");
  if (a.ndim != b.ndim || a.num_elements != b.num_elements || !std::equal(a.dims, a.dims + KeyHeader::kMaxDims, b.dims))
    parts.push_back("shape");
  if (a.op != b.op) parts.push_back("reduce op");
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i) text += (i ? (i + 1 == parts.size() ? " and " : ", ") : "") + parts[i];
  return text + (parts.size() == 1 ? " differs" : " differ");
}

}  // namespace

KeyHeader KeyHeader::describe(int64_t key, KeyOperation operation, DataType dtype, const std::vector<int64_t>& shape,
                              ReduceOp op) {
  KeyHeader header;
  header.key = key;
  header.operation = static_cast<int32_t>(operation);
  header.dtype = static_cast<int32_t>(dtype);
  header.ndim = static_cast<int32_t>(shape.size());
  header.op = operation == KeyOperation::kPush ? static_cast<int32_t>(op) : 0;
  header.num_elements = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    header.num_elements *= shape[i];
    if (i < static_cast<size_t>(kMaxDims)) header.dims[i] = shape[i];
  }
  return header;
}

void KeyHeader::set_problem(KeyProblem code, const std::string& text) {
  problem = static_cast<int32_t>(code);
  const size_t n = std::min(text.size(), static_cast<size_t>(kDetailBytes - 1));
  std::memcpy(detail, text.data(), n);
  detail[n] = '\0';
}

bool KeyHeader::same_request(const KeyHeader& other) const {
  return key == other.key && operation == other.operation && dtype == other.dtype && ndim == other.ndim &&
         op == other.op && num_elements == other.num_elements && std::equal(dims, dims + kMaxDims, other.dims);
}

std::string describe_verdict(const Verdict& verdict) {
  if (verdict.bad_rank < 0) return "";
  const KeyHeader& bad = verdict.bad;
  std::ostringstream out;
  out << "KVStore " << operation_name(bad.operation) << ": ";
  if (bad.problem != static_cast<int32_t>(KeyProblem::kNone)) {
    out << "rank " << verdict.bad_rank << " cannot take part in the " << describe_request(bad) << ": "
        << std::string(bad.detail, strnlen(bad.detail, KeyHeader::kDetailBytes))
        << "; the collective was skipped on every rank";
    if (verdict.bad_rank != 0) out << " (rank 0 was at the " << describe_request(verdict.root) << ")";
  } else {
    out << "ranks disagree: rank 0 is at the " << describe_request(verdict.root) << ", rank " << verdict.bad_rank
        << " at the " << describe_request(bad) << " (" << differences(verdict.root, bad)
        << "); every rank must init and push the same keys with the same dtype and shape in the same order "
           "(per communicator); the collective was skipped on every rank";
  }
  if (verdict.num_bad > 1) {
    out << "; " << verdict.num_bad << " ranks in all cannot take part or differ from rank 0: ranks ";
    const int shown = std::min(verdict.num_bad, Verdict::kMaxListed);
    for (int i = 0; i < shown; ++i) out << (i ? ", " : "") << verdict.listed[i];
    if (verdict.num_bad > shown) out << ", ...";
  }
  return out.str();
}

void throw_if_bad(const Verdict& verdict) {
  if (verdict.bad_rank < 0) return;
  if (verdict.bad.problem != static_cast<int32_t>(KeyProblem::kNone)) throw InvalidArgument(describe_verdict(verdict));
  throw MismatchError(describe_verdict(verdict));
}

KeyCheck::KeyCheck(Communicator& comm, const KeyHeader& mine) : comm_(comm), mine_(mine) {
  const int P = comm.size();
  if (comm.rank() == 0) {
    headers_.resize(P);
    headers_[0] = mine_;
    for (int r = 1; r < P; ++r) receives_.post(comm.irecv(&headers_[r], sizeof(KeyHeader), r, kHeaderTag));
  } else {
    sends_.post(comm.isend(&mine_, sizeof(KeyHeader), 0, kHeaderTag));
    receives_.post(comm.irecv(&verdict_, sizeof(Verdict), 0, kVerdictTag));
  }
}

void KeyCheck::decide() {
  verdict_.root = headers_[0];
  for (int r = 0; r < comm_.size(); ++r) {
    const KeyHeader& header = headers_[r];
    if (header.problem == static_cast<int32_t>(KeyProblem::kNone) && header.same_request(headers_[0])) continue;
    if (verdict_.bad_rank < 0) {
      verdict_.bad_rank = r;
      verdict_.bad = header;
    }
    if (verdict_.num_bad < Verdict::kMaxListed) verdict_.listed[verdict_.num_bad] = r;
    ++verdict_.num_bad;
  }
  for (int r = 1; r < comm_.size(); ++r) sends_.post(comm_.isend(&verdict_, sizeof(Verdict), r, kVerdictTag));
  decided_ = true;
}

Progress KeyCheck::progress() {
  if (!receives_.reap()) return Progress::kInProgress;
  if (comm_.rank() == 0 && !decided_) decide();
  return sends_.reap() ? Progress::kDone : Progress::kInProgress;
}

}  // namespace concord::kvstore
