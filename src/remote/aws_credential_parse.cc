// Parsing what credentials services answer (see aws_credentials.h): flat
// JSON and the few elements of an STS answer, bounded, never quoting the
// text in a message (it holds secrets).
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "b2ndfs/remote/aws_credentials.h"
#include "b2ndfs/remote/s3_xml.h"
#include "b2ndfs/util/json.h"
#include "b2ndfs/util/text.h"

namespace b2ndfs::remote {
namespace {

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
      text::AppendUtf8(static_cast<uint32_t>(cp), &out);
    } else {
      return std::nullopt;
    }
    i = semi;
  }
  return out;
}

}  // namespace

Result<std::map<std::string, std::string>> ParseFlatJson(const std::string& text) {
  auto bad = [](const std::string& why) { return Status(EIO, "malformed JSON: " + why); };
  auto doc = json::Parse(text);
  // The reader's messages say where, never what: no secret is quoted.
  if (!doc.ok()) return doc.status();
  if (!doc->is_object()) return bad("not an object");
  std::map<std::string, std::string> out;
  for (size_t k = 0; k < doc->keys.size(); ++k) {
    const json::Value& v = doc->items[k];
    switch (v.kind) {
      case json::Value::Kind::kString:
        out[doc->keys[k]] = v.text;
        break;
      case json::Value::Kind::kNumber:
        out[doc->keys[k]] = v.number;
        break;
      case json::Value::Kind::kBool:
      case json::Value::Kind::kNull:
        out[doc->keys[k]] = text.substr(v.begin, v.end - v.begin);
        break;
      default:
        return bad("a nested value");
    }
  }
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
