#include "b2ndfs/remote/byteranges.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string_view>

#include "b2ndfs/remote/http_client.h"
#include "b2ndfs/util/text.h"

namespace b2ndfs::remote {
namespace {

// A preamble, a part's headers: nginx sends well under 200 bytes of each.
constexpr size_t kMaxHeaderBytes = 8192;
// After the closing delimiter (nginx: "\r\n").
constexpr size_t kMaxEpilogueBytes = 1024;

using ::b2ndfs::text::Lower;
// A view: the part headers' values are copied only where kept.
std::string_view TrimField(std::string_view s) { return ::b2ndfs::text::TrimView(s); }

}  // namespace

std::optional<std::string> ByterangesBoundary(const std::string& content_type) {
  const std::string lower = Lower(content_type);
  const size_t semi = lower.find(';');
  if (TrimField(std::string_view(lower).substr(0, semi)) != "multipart/byteranges")
    return std::nullopt;
  if (semi == std::string::npos) return std::nullopt;
  size_t at = lower.find("boundary=", semi);
  if (at == std::string::npos) return std::nullopt;
  at += 9;
  std::string_view value(content_type);
  value = value.substr(at);
  value = value.substr(0, value.find(';'));
  value = TrimField(value);
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
    value = value.substr(1, value.size() - 2);
  }
  if (value.empty() || value.size() > 70) return std::nullopt;
  for (char c : value) {
    if (c == '\r' || c == '\n' || c == '"' || static_cast<unsigned char>(c) < 0x20) {
      return std::nullopt;
    }
  }
  return std::string(value);
}

ByterangesParser::ByterangesParser(std::vector<Target> targets, int64_t total)
    : targets_(std::move(targets)), filled_(targets_.size(), false), total_(total) {}

void ByterangesParser::StartMultipart(std::string boundary) {
  delimiter_ = "--" + boundary;
  state_ = State::kPreamble;
}

bool ByterangesParser::StartSinglePart(const std::string& content_range) {
  single_ = true;
  return BeginPart(content_range);
}

bool ByterangesParser::Fail(std::string why) {
  if (state_ != State::kFailed) error_ = std::move(why);
  state_ = State::kFailed;
  return false;
}

bool ByterangesParser::BeginPart(const std::string& content_range) {
  const auto cr = ParseContentRange(content_range);
  if (!cr) return Fail("a part with a malformed Content-Range '" + content_range + "'");
  if (total_ >= 0 && cr->total != total_) {
    changed_ = true;
    return Fail("a part names another total size (" + std::to_string(cr->total) + ")");
  }
  bool any = false;
  part_targets_.clear();
  for (size_t i = 0; i < targets_.size(); ++i) {
    const Target& t = targets_[i];
    if (t.last < cr->first || t.first > cr->last) continue;
    if (t.first < cr->first || t.last > cr->last) {
      return Fail("a part (bytes " + std::to_string(cr->first) + "-" + std::to_string(cr->last) +
                  ") covers only some of a range asked for");
    }
    if (filled_[i]) {
      return Fail("bytes " + std::to_string(t.first) + "-" + std::to_string(t.last) +
                  " came twice");
    }
    filled_[i] = true;
    part_targets_.push_back(i);
    any = true;
  }
  if (!any) {
    return Fail("a part (bytes " + std::to_string(cr->first) + "-" + std::to_string(cr->last) +
                ") that no range asked for");
  }
  part_first_ = cr->first;
  part_last_ = cr->last;
  part_pos_ = cr->first;
  state_ = State::kBody;
  return true;
}

bool ByterangesParser::ParseHeaders() {
  std::string_view headers(pending_);
  std::string content_range;
  bool found = false;
  while (!headers.empty()) {
    const size_t eol = headers.find("\r\n");
    const std::string_view line = headers.substr(0, eol);
    headers = eol == std::string_view::npos ? std::string_view() : headers.substr(eol + 2);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    if (Lower(TrimField(line.substr(0, colon))) != "content-range") continue;
    if (found) return Fail("a part with two Content-Range headers");
    found = true;
    content_range = std::string(TrimField(line.substr(colon + 1)));
  }
  if (!found) return Fail("a part without Content-Range");
  return BeginPart(content_range);
}

bool ByterangesParser::Feed(const char* data, size_t n) {
  std::string_view in(data, n);
  while (!in.empty()) {
    switch (state_) {
      case State::kFailed:
        return false;
      case State::kPreamble:
      case State::kHeaders:
      case State::kDelimiter: {
        // These states gather bytes until what ends them is in pending_;
        // the bytes after it are the rest of `in`.
        const size_t before = pending_.size();
        pending_.append(in);
        size_t consumed = 0;  // bytes of pending_ this state takes
        if (state_ == State::kPreamble) {
          // The first delimiter, at the start or after a CRLF, then CRLF.
          size_t at = pending_.find(delimiter_);
          while (at != std::string::npos && at != 0 &&
                 (at < 2 || pending_.compare(at - 2, 2, "\r\n") != 0)) {
            at = pending_.find(delimiter_, at + 1);
          }
          if (at == std::string::npos || pending_.size() < at + delimiter_.size() + 2) {
            if (pending_.size() > kMaxHeaderBytes) return Fail("no boundary where the body starts");
            return true;
          }
          if (pending_.compare(at + delimiter_.size(), 2, "\r\n") != 0) {
            return Fail("the first boundary is not followed by a line end");
          }
          consumed = at + delimiter_.size() + 2;
          state_ = State::kHeaders;
        } else if (state_ == State::kHeaders) {
          const size_t end = pending_.find("\r\n\r\n");
          if (end == std::string::npos) {
            if (pending_.size() > kMaxHeaderBytes) return Fail("a part's headers are too long");
            return true;
          }
          consumed = end + 4;
          pending_.resize(end + 2);
          if (!ParseHeaders()) return false;
        } else {
          // "\r\n--boundary" then "\r\n" (another part) or "--" (the end).
          const size_t want = 2 + delimiter_.size() + 2;
          if (pending_.size() < want) return true;
          if (pending_.compare(0, 2, "\r\n") != 0 ||
              pending_.compare(2, delimiter_.size(), delimiter_) != 0) {
            return Fail("a part is not followed by the boundary");
          }
          const std::string_view tail = std::string_view(pending_).substr(2 + delimiter_.size(), 2);
          if (tail == "\r\n") {
            state_ = State::kHeaders;
          } else if (tail == "--") {
            state_ = State::kEpilogue;
          } else {
            return Fail("a boundary followed by neither a line end nor --");
          }
          consumed = want;
        }
        // consumed > before always: what ends a state was not in pending_
        // before this call.
        in.remove_prefix(std::min(in.size(), consumed - std::min(consumed, before)));
        pending_.clear();
        break;
      }
      case State::kBody: {
        const int64_t left = part_last_ + 1 - part_pos_;
        const size_t k =
            static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(in.size())));
        const int64_t lo = part_pos_, hi = part_pos_ + static_cast<int64_t>(k);  // [lo, hi)
        for (const Target& t : targets_) {
          const int64_t a = std::max(lo, t.first), b = std::min(hi, t.last + 1);
          if (a < b) {
            std::memcpy(t.out + (a - t.first), in.data() + (a - lo), static_cast<size_t>(b - a));
          }
        }
        part_pos_ = hi;
        in.remove_prefix(k);
        if (part_pos_ > part_last_) {
          state_ = single_ ? State::kEpilogue : State::kDelimiter;
          completed_.insert(completed_.end(), part_targets_.begin(), part_targets_.end());
          part_targets_.clear();
        }
        break;
      }
      case State::kEpilogue:
        if (single_) return Fail("more bytes than the part's Content-Range");
        pending_.append(in);
        if (pending_.size() > kMaxEpilogueBytes) return Fail("bytes after the closing boundary");
        return true;
    }
  }
  return state_ != State::kFailed;
}

void ByterangesParser::TakeCompleted(std::vector<size_t>* out) {
  out->insert(out->end(), completed_.begin(), completed_.end());
  completed_.clear();
}

bool ByterangesParser::Finish() {
  if (state_ == State::kFailed) return false;
  if (state_ == State::kPreamble) return Fail("no boundary where the body starts");
  if (state_ != State::kEpilogue) return Fail("the body ended inside a part");
  for (size_t i = 0; i < targets_.size(); ++i) {
    if (!filled_[i]) {
      return Fail("no part for bytes " + std::to_string(targets_[i].first) + "-" +
                  std::to_string(targets_[i].last));
    }
  }
  return true;
}

}  // namespace b2ndfs::remote
