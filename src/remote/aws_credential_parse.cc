// Parsing what credentials services answer (see aws_credentials.h): flat
// JSON and the few elements of an STS answer, bounded, never quoting the
// text in a message (it holds secrets).
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "b2ndfs/remote/aws_credentials.h"
#include "b2ndfs/remote/s3_xml.h"

namespace b2ndfs::remote {
namespace {

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// ISO 8601 in UTC: "...Z", or "+00:00" as Python's isoformat() writes it.
std::optional<int64_t> ParseExpiration(std::string text) {
  if (text.size() > 6 && text.compare(text.size() - 6, 6, "+00:00") == 0) {
    text.replace(text.size() - 6, 6, "Z");
  }
  return ParseIso8601(text);
}

Result<ExpiringCredentials> FromMembers(const std::map<std::string, std::string>& m,
                                        const char* token_member, const std::string& what) {
  auto get = [&](const char* k) {
    auto it = m.find(k);
    return it == m.end() ? std::string() : it->second;
  };
  ExpiringCredentials c;
  c.keys.access_key_id = get("AccessKeyId");
  c.keys.secret_access_key = get("SecretAccessKey");
  c.keys.session_token = get(token_member);
  if (c.keys.access_key_id.empty() || c.keys.secret_access_key.empty()) {
    return Status(EIO, what + " lacks AccessKeyId or SecretAccessKey");
  }
  if (const std::string e = get("Expiration"); !e.empty()) {
    c.expiration = ParseExpiration(e);
    if (!c.expiration) return Status(EIO, what + ": Expiration is not an ISO 8601 UTC time");
  }
  return c;
}

// The text of the first <TAG>...</TAG> inside [from, to) of `xml`, entities
// decoded; nullopt when absent or malformed.
std::optional<std::string> XmlText(const std::string& xml, size_t from, size_t to,
                                   const std::string& tag) {
  const size_t open = xml.find("<" + tag + ">", from);
  if (open == std::string::npos || open >= to) return std::nullopt;
  const size_t start = open + tag.size() + 2;
  const size_t close = xml.find("</" + tag + ">", start);
  if (close == std::string::npos || close > to) return std::nullopt;
  std::string out;
  for (size_t i = start; i < close; ++i) {
    const char c = xml[i];
    if (c == '<') return std::nullopt;
    if (c != '&') {
      out.push_back(c);
      continue;
    }
    const size_t semi = xml.find(';', i);
    if (semi == std::string::npos || semi > close || semi - i > 10) return std::nullopt;
    const std::string entity = xml.substr(i + 1, semi - i - 1);
    if (entity == "amp") {
      out.push_back('&');
    } else if (entity == "lt") {
      out.push_back('<');
    } else if (entity == "gt") {
      out.push_back('>');
    } else if (entity == "quot") {
      out.push_back('"');
    } else if (entity == "apos") {
      out.push_back('\'');
    } else if (entity.size() > 1 && entity[0] == '#') {
      const bool hex = entity[1] == 'x';
      char* end = nullptr;
      const unsigned long cp = std::strtoul(entity.c_str() + (hex ? 2 : 1), &end, hex ? 16 : 10);
      if (*end != '\0' || cp == 0 || cp > 0x10FFFF) return std::nullopt;
      AppendUtf8(static_cast<uint32_t>(cp), &out);
    } else {
      return std::nullopt;
    }
    i = semi;
  }
  return out;
}

}  // namespace

Result<std::map<std::string, std::string>> ParseFlatJson(const std::string& text) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  auto ws = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  auto bad = [](const char* why) { return Status(EIO, std::string("malformed JSON: ") + why); };
  auto string = [&](std::string* s) -> bool {
    if (i >= text.size() || text[i] != '"') return false;
    for (++i; i < text.size(); ++i) {
      const char c = text[i];
      if (c == '"') {
        ++i;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        s->push_back(c);
        continue;
      }
      if (++i >= text.size()) return false;
      switch (text[i]) {
        case '"':
          s->push_back('"');
          break;
        case '\\':
          s->push_back('\\');
          break;
        case '/':
          s->push_back('/');
          break;
        case 'b':
          s->push_back('\b');
          break;
        case 'f':
          s->push_back('\f');
          break;
        case 'n':
          s->push_back('\n');
          break;
        case 'r':
          s->push_back('\r');
          break;
        case 't':
          s->push_back('\t');
          break;
        case 'u': {
          if (i + 4 >= text.size()) return false;
          uint32_t cp = 0;
          for (int k = 1; k <= 4; ++k) {
            const char h = text[i + k];
            if (!std::isxdigit(static_cast<unsigned char>(h))) return false;
            cp = cp * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h))
                                                     ? h - '0'
                                                     : (std::tolower(h) - 'a' + 10));
          }
          i += 4;
          AppendUtf8(cp, s);
          break;
        }
        default:
          return false;
      }
    }
    return false;
  };
  ws();
  if (i >= text.size() || text[i] != '{') return bad("not an object");
  ++i;
  ws();
  if (i < text.size() && text[i] == '}') {
    ++i;
  } else {
    for (;;) {
      ws();
      std::string key, value;
      if (!string(&key)) return bad("a member name");
      ws();
      if (i >= text.size() || text[i] != ':') return bad("':' expected");
      ++i;
      ws();
      if (i < text.size() && text[i] == '"') {
        if (!string(&value)) return bad("a string");
      } else {
        const size_t start = i;
        while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) ||
                                   std::strchr("+-.", text[i]) != nullptr)) {
          ++i;
        }
        if (i == start) return bad("a nested or missing value");
        value = text.substr(start, i - start);
      }
      out[key] = std::move(value);
      ws();
      if (i < text.size() && text[i] == ',') {
        ++i;
        continue;
      }
      if (i < text.size() && text[i] == '}') {
        ++i;
        break;
      }
      return bad("',' or '}' expected");
    }
  }
  ws();
  if (i != text.size()) return bad("text after the object");
  return out;
}

Result<ExpiringCredentials> ParseProcessCredentials(const std::string& json) {
  B2NDFS_ASSIGN_OR_RETURN(const auto members, ParseFlatJson(json));
  auto version = members.find("Version");
  if (version == members.end() || version->second != "1") {
    return Status(EIO, "the output's Version is not 1");
  }
  return FromMembers(members, "SessionToken", "the output");
}

Result<ExpiringCredentials> ParseEndpointCredentials(const std::string& json) {
  B2NDFS_ASSIGN_OR_RETURN(const auto members, ParseFlatJson(json));
  return FromMembers(members, "Token", "the answer");
}

Result<ExpiringCredentials> ParseStsCredentials(const std::string& xml) {
  if (xml.size() > kMaxCredentialAnswer) return Status(EIO, "the STS answer is too large");
  if (xml.find("<!") != std::string::npos) {
    return Status(EIO, "the STS answer has a DOCTYPE, CDATA or comment");
  }
  const size_t open = xml.find("<Credentials>");
  const size_t close = xml.find("</Credentials>");
  if (open == std::string::npos || close == std::string::npos || close < open ||
      xml.find("<Credentials>", open + 1) != std::string::npos) {
    return Status(EIO, "the STS answer has not one <Credentials>");
  }
  ExpiringCredentials c;
  const auto key = XmlText(xml, open, close, "AccessKeyId");
  const auto secret = XmlText(xml, open, close, "SecretAccessKey");
  const auto token = XmlText(xml, open, close, "SessionToken");
  const auto expiration = XmlText(xml, open, close, "Expiration");
  if (!key || !secret || !token || !expiration || key->empty() || secret->empty()) {
    return Status(EIO,
                  "the STS <Credentials> lacks AccessKeyId, SecretAccessKey, SessionToken or "
                  "Expiration");
  }
  c.keys = AwsCredentials{*key, *secret, *token};
  c.expiration = ParseExpiration(*expiration);
  if (!c.expiration) return Status(EIO, "the STS <Expiration> is not an ISO 8601 UTC time");
  return c;
}

std::string FormatExpiration(int64_t seconds) {
  const time_t t = static_cast<time_t>(seconds);
  struct tm tm {};
  ::gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace b2ndfs::remote
