#include "xml_doc.h"

#include <cctype>
#include <cstdint>
#include <cstring>

namespace b2ndfs::remote {
namespace {

constexpr int kMaxDepth = 32;
constexpr size_t kMaxXmlElements = 1u << 20;

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':' || c == '-' ||
         c == '.' || (static_cast<unsigned char>(c) & 0x80);
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  Result<XmlElement> Document() {
    if (s_.compare(0, 3, "\xEF\xBB\xBF") == 0) pos_ = 3;
    SkipSpace();
    if (s_.compare(pos_, 5, "<?xml") == 0) {
      const size_t end = s_.find("?>", pos_);
      if (end == std::string::npos) return Bad("an unterminated XML declaration");
      pos_ = end + 2;
    }
    B2NDFS_RETURN_IF_ERROR(SkipMisc());
    if (pos_ >= s_.size() || s_[pos_] != '<') return Bad("no root element");
    XmlElement root;
    B2NDFS_RETURN_IF_ERROR(ParseXmlElement(&root, 0));
    B2NDFS_RETURN_IF_ERROR(SkipMisc());
    if (pos_ != s_.size()) return Bad("content after the root element");
    return root;
  }

 private:
  Status Bad(const std::string& what) const {
    return Status(EIO, "malformed XML at byte " + std::to_string(pos_) + ": " + what);
  }
  // An element name for a message: the document is untrusted, so at most a
  // short printable prefix of it goes to the log (found by fuzz_s3_xml).
  static std::string Shown(const std::string& name) {
    std::string out;
    for (char c : name.substr(0, 32)) {
      out += (c >= 0x21 && c < 0x7f) ? c : '?';
    }
    return name.size() > 32 ? out + "..." : out;
  }
  void SkipSpace() {
    while (pos_ < s_.size() && std::strchr(" \t\r\n", s_[pos_]) != nullptr && s_[pos_] != '\0') {
      ++pos_;
    }
  }
  // Blanks, comments and processing instructions (between elements).
  Status SkipMisc() {
    for (;;) {
      SkipSpace();
      if (s_.compare(pos_, 4, "<!--") == 0) {
        B2NDFS_RETURN_IF_ERROR(SkipPast("-->"));
      } else if (s_.compare(pos_, 2, "<?") == 0) {
        B2NDFS_RETURN_IF_ERROR(SkipPast("?>"));
      } else if (s_.compare(pos_, 2, "<!") == 0) {
        return Bad("a DOCTYPE or other declaration");
      } else {
        return Status::Ok();
      }
    }
  }
  Status SkipPast(const char* end) {
    const size_t at = s_.find(end, pos_ + 2);
    if (at == std::string::npos) return Bad(std::string("no closing ") + end);
    pos_ = at + std::strlen(end);
    return Status::Ok();
  }
  Result<std::string> Name() {
    const size_t start = pos_;
    while (pos_ < s_.size() && IsNameChar(s_[pos_])) ++pos_;
    if (pos_ == start) return Bad("a missing name");
    return s_.substr(start, pos_ - start);
  }
  static std::string Local(const std::string& name) {
    const size_t colon = name.rfind(':');
    return colon == std::string::npos ? name : name.substr(colon + 1);
  }
  // Text up to `stop` with entities and character references decoded.
  Status Text(char stop, std::string* out) {
    while (pos_ < s_.size() && s_[pos_] != stop) {
      const char c = s_[pos_];
      if (c == '<' || c == '\0') return Bad("'<' or NUL inside text");
      if (c != '&') {
        *out += c;
        ++pos_;
        continue;
      }
      const size_t semi = s_.find(';', pos_);
      if (semi == std::string::npos || semi - pos_ > 12) return Bad("a malformed entity");
      const std::string ref = s_.substr(pos_ + 1, semi - pos_ - 1);
      pos_ = semi + 1;
      if (ref == "lt") {
        *out += '<';
      } else if (ref == "gt") {
        *out += '>';
      } else if (ref == "amp") {
        *out += '&';
      } else if (ref == "quot") {
        *out += '"';
      } else if (ref == "apos") {
        *out += '\'';
      } else if (ref.size() >= 2 && ref[0] == '#') {
        const bool hex = ref[1] == 'x';
        const std::string digits = ref.substr(hex ? 2 : 1);
        if (digits.empty() || digits.size() > 7) return Bad("a malformed character reference");
        uint32_t cp = 0;
        for (char d : digits) {
          int v;
          if (d >= '0' && d <= '9') {
            v = d - '0';
          } else if (hex && d >= 'a' && d <= 'f') {
            v = d - 'a' + 10;
          } else if (hex && d >= 'A' && d <= 'F') {
            v = d - 'A' + 10;
          } else {
            return Bad("a malformed character reference");
          }
          cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(v);
        }
        if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
          return Bad("a character reference out of range");
        }
        AppendUtf8(cp, out);
      } else {
        return Bad("an unknown entity");
      }
    }
    return Status::Ok();
  }
  Status ParseXmlElement(XmlElement* e, int depth) {
    if (depth >= kMaxDepth) return Bad("nesting too deep");
    if (++elements_ > kMaxXmlElements) return Bad("too many elements");
    ++pos_;  // '<'
    B2NDFS_ASSIGN_OR_RETURN(const std::string name, Name());
    e->name = Local(name);
    for (;;) {  // attributes
      SkipSpace();
      if (pos_ >= s_.size()) return Bad("an unterminated tag");
      if (s_.compare(pos_, 2, "/>") == 0) {
        pos_ += 2;
        return Status::Ok();
      }
      if (s_[pos_] == '>') {
        ++pos_;
        break;
      }
      B2NDFS_ASSIGN_OR_RETURN(const std::string attribute, Name());
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != '=') return Bad("an attribute without '='");
      ++pos_;
      SkipSpace();
      if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\'')) {
        return Bad("an unquoted attribute");
      }
      const char quote = s_[pos_++];
      std::string value;
      B2NDFS_RETURN_IF_ERROR(Text(quote, &value));
      if (pos_ >= s_.size()) return Bad("an unterminated attribute");
      ++pos_;
      e->attributes.emplace_back(Local(attribute), std::move(value));
    }
    for (;;) {  // content
      B2NDFS_RETURN_IF_ERROR(Text('<', &e->text));
      if (pos_ >= s_.size()) return Bad("<" + Shown(e->name) + "> is not closed");
      if (s_.compare(pos_, 2, "</") == 0) {
        pos_ += 2;
        B2NDFS_ASSIGN_OR_RETURN(const std::string closing, Name());
        SkipSpace();
        if (closing != name || pos_ >= s_.size() || s_[pos_] != '>') {
          return Bad("a closing tag that does not match");
        }
        ++pos_;
        return Status::Ok();
      }
      if (s_.compare(pos_, 4, "<!--") == 0) {
        B2NDFS_RETURN_IF_ERROR(SkipPast("-->"));
      } else if (s_.compare(pos_, 9, "<![CDATA[") == 0) {
        const size_t end = s_.find("]]>", pos_ + 9);
        if (end == std::string::npos) return Bad("an unterminated CDATA section");
        e->text.append(s_, pos_ + 9, end - pos_ - 9);
        pos_ = end + 3;
      } else if (s_.compare(pos_, 2, "<?") == 0) {
        B2NDFS_RETURN_IF_ERROR(SkipPast("?>"));
      } else if (s_.compare(pos_, 2, "<!") == 0) {
        return Bad("a declaration inside an element");
      } else {
        e->children.emplace_back();
        B2NDFS_RETURN_IF_ERROR(ParseXmlElement(&e->children.back(), depth + 1));
      }
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
  size_t elements_ = 0;
};

}  // namespace

Result<XmlElement> ParseXml(const std::string& text) { return Parser(text).Document(); }

}  // namespace b2ndfs::remote
