// remote/byteranges: the answer to a multi-range request (`Range: bytes=a-b,
// c-d,...`), parsed as it streams in: a `multipart/byteranges` body (RFC 9110
// 14.6), or a single 206 part when the server joined the ranges into one.
//
// Each range asked for (a Target) must be filled exactly once, from a part
// whose Content-Range contains it whole; parts may come in any order, and a
// part may cover several targets (a server coalescing near ranges) or bytes
// no target wants (dropped). Anything else is refused at once, before a
// byte of the part is written: a part overlapping a target only partly or
// filling one twice, a part with no or a malformed Content-Range, a total
// size other than the version's, a missing or wrong boundary, headers or a
// preamble longer than a few KiB, bytes after the closing delimiter beyond
// a small epilogue. Finish() then says whether every target was filled;
// TakeCompleted() tells which ones are whole already, part by part.
// Pure: no I/O. Thread-safety: one parser per answer, one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace b2ndfs::remote {

// The boundary of a `multipart/byteranges; boundary=...` Content-Type
// (quoted or not); nullopt for any other type or a malformed boundary.
std::optional<std::string> ByterangesBoundary(const std::string& content_type);

class ByterangesParser {
 public:
  // Bytes [first, last] of the object go to out.
  struct Target {
    int64_t first = 0;
    int64_t last = 0;
    uint8_t* out = nullptr;
  };
  // `total`: the object's size every part must name (-1: not checked).
  ByterangesParser(std::vector<Target> targets, int64_t total);

  // The answer is multipart with this boundary.
  void StartMultipart(std::string boundary);
  // The answer is one part (a 206 with this Content-Range value).
  bool StartSinglePart(const std::string& content_range);
  // Body bytes, in order; false once the body is refused (error() says why;
  // later calls keep returning false).
  bool Feed(const char* data, size_t n);
  // After the last byte: true when the body ended where it may and every
  // target was filled.
  bool Finish();

  // Appends the targets (indices into those given) whose bytes have all
  // been written since the last call: those of each part once it ended, so
  // that a caller can use them before the answer is over.
  void TakeCompleted(std::vector<size_t>* out);

  const std::string& error() const { return error_; }
  // True when the refusal was another total size (the object changed).
  bool changed() const { return changed_; }
  const std::vector<bool>& filled() const { return filled_; }

 private:
  enum class State { kPreamble, kHeaders, kBody, kDelimiter, kEpilogue, kFailed };
  bool Fail(std::string why);
  bool BeginPart(const std::string& content_range);
  bool ParseHeaders();

  std::vector<Target> targets_;
  std::vector<bool> filled_;
  const int64_t total_;
  std::string delimiter_;  // "--" + boundary
  State state_ = State::kPreamble;
  std::string pending_;  // bytes of a preamble, headers or delimiter so far
  // The part being copied: bytes [part_first_, part_last_] of the object.
  int64_t part_first_ = 0;
  int64_t part_last_ = 0;
  int64_t part_pos_ = 0;              // next byte of the object to come
  std::vector<size_t> part_targets_;  // the targets inside that part
  std::vector<size_t> completed_;     // not yet taken (TakeCompleted)
  bool single_ = false;
  std::string error_;
  bool changed_ = false;
};

}  // namespace b2ndfs::remote
