#include "azure_auth.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>

#include "b2ndfs/remote/autoindex.h"
#include "b2ndfs/util/text.h"

namespace b2ndfs::remote {
namespace {

using ::b2ndfs::text::Lower;
using ::b2ndfs::text::Trim;

// A SAS token goes into every URL: only the characters a query carries
// as they are (its signature is percent-encoded base64).
Result<std::string> CheckSas(std::string sas, const std::string& origin) {
  sas = Trim(sas);
  if (!sas.empty() && sas.front() == '?') sas.erase(0, 1);
  if (sas.empty()) return Status(EINVAL, origin + ": an empty SAS token");
  for (unsigned char c : sas) {
    if (!std::isalnum(c) &&
        std::string("-._~%&=:+/,").find(static_cast<char>(c)) == std::string::npos) {
      return Status(EINVAL, origin + ": not a SAS token (a query string such as sv=...&sig=...)");
    }
  }
  if (("&" + sas).find("&sig=") == std::string::npos) {
    return Status(EINVAL, origin + ": a SAS token without sig=");
  }
  return sas;
}

Result<std::string> CheckKey(const std::string& key, const std::string& origin) {
  auto decoded = DecodeBase64(Trim(key));
  if (!decoded.ok() || decoded->empty()) {
    return Status(EINVAL, origin + ": not an account key (base64, as the portal shows it)");
  }
  return decoded;
}

std::string HmacSha256Raw(const std::string& key, const std::string& data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &length);
  return std::string(reinterpret_cast<const char*>(out), length);
}

}  // namespace

Result<std::string> DecodeBase64(const std::string& text) {
  if (text.size() % 4 != 0) return Status(EINVAL, "not base64");
  // '=' only as the padding at the end (one or two).
  size_t data = text.size();
  while (data > 0 && text.size() - data < 2 && text[data - 1] == '=') --data;
  for (size_t i = 0; i < data; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (!std::isalnum(c) && c != '+' && c != '/') return Status(EINVAL, "not base64");
  }
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return Status(EINVAL, "not base64");
  out.resize(static_cast<size_t>(n) - (text.size() - data));
  return out;
}

std::string EncodeBase64(const std::string& bytes) {
  std::string out((bytes.size() + 2) / 3 * 4 + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

Result<std::vector<std::pair<std::string, std::string>>> ParseAzureCredentialsFile(
    const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    const std::string trimmed = Trim(line);
    if (trimmed.empty() || trimmed[0] == '#') continue;
    const size_t eq = trimmed.find('=');
    const std::string name = eq == std::string::npos ? "" : Lower(Trim(trimmed.substr(0, eq)));
    if (name != "account_name" && name != "account_key" && name != "sas_token") {
      return Status(EINVAL, "line " + std::to_string(number) +
                                ": expected account_name=, account_key= or sas_token=");
    }
    out.emplace_back(name, Trim(trimmed.substr(eq + 1)));
  }
  return out;
}

Result<AzureCredentials> ResolveAzureCredentials(const AzureSettings& settings,
                                                 const EnvLookup& env) {
  AzureCredentials out;
  out.account = settings.account;
  if (settings.no_sign) {
    out.origin = "no_sign (anonymous)";
    return out;
  }
  if (!settings.credentials_file.empty()) {
    const std::string origin = "credentials=" + settings.credentials_file;
    std::ifstream in(settings.credentials_file);
    if (!in) return Status(EACCES, origin + ": cannot be read");
    std::stringstream text;
    text << in.rdbuf();
    auto lines = ParseAzureCredentialsFile(text.str());
    if (!lines.ok()) return Status(EINVAL, origin + ": " + lines.status().message());
    std::string key, sas;
    for (const auto& [name, value] : *lines) {
      if (name == "account_name" && value != settings.account) {
        return Status(EINVAL, origin + " is for account '" + value.substr(0, 64) +
                                  "', not the source's '" + settings.account + "'");
      }
      if (name == "account_key") key = value;
      if (name == "sas_token") sas = value;
    }
    if (!key.empty() && !sas.empty()) {
      return Status(EINVAL, origin + ": both account_key= and sas_token= (keep one)");
    }
    out.origin = origin;
    if (!key.empty()) {
      B2NDFS_ASSIGN_OR_RETURN(out.key, CheckKey(key, origin));
    } else if (!sas.empty()) {
      B2NDFS_ASSIGN_OR_RETURN(out.sas, CheckSas(sas, origin));
    } else {
      return Status(EINVAL, origin + ": no account_key= or sas_token=");
    }
    return out;
  }
  if (auto key = env("AZURE_STORAGE_KEY"); key && !key->empty()) {
    if (auto account = env("AZURE_STORAGE_ACCOUNT");
        account && !account->empty() && *account != settings.account) {
      return Status(EINVAL, "AZURE_STORAGE_KEY is the key of AZURE_STORAGE_ACCOUNT='" +
                                account->substr(0, 64) + "', not of the source's account '" +
                                settings.account + "'");
    }
    out.origin = "AZURE_STORAGE_KEY";
    B2NDFS_ASSIGN_OR_RETURN(out.key, CheckKey(*key, out.origin));
    return out;
  }
  if (auto sas = env("AZURE_STORAGE_SAS_TOKEN"); sas && !sas->empty()) {
    out.origin = "AZURE_STORAGE_SAS_TOKEN";
    B2NDFS_ASSIGN_OR_RETURN(out.sas, CheckSas(*sas, out.origin));
    return out;
  }
  return Status(EACCES,
                "no credentials for account '" + settings.account +
                    "': set AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, give credentials=FILE, "
                    "or no_sign for a public container");
}

std::string AzureStringToSign(const AzureRequest& request, const std::string& account) {
  const size_t scheme = request.url.find("://");
  const size_t authority = scheme == std::string::npos ? 0 : scheme + 3;
  const size_t query_start = request.url.find('?', authority);
  size_t path_start = request.url.find('/', authority);
  if (path_start > query_start) path_start = std::string::npos;
  std::string path = "/";
  if (path_start != std::string::npos) {
    path =
        request.url.substr(path_start, query_start == std::string::npos ? std::string::npos
                                                                        : query_start - path_start);
  }
  // Query parameters: names lower-cased and sorted, values decoded; a
  // repeated name's values joined by ',' (sorted).
  std::vector<std::pair<std::string, std::string>> query;
  if (query_start != std::string::npos) {
    std::istringstream pairs(request.url.substr(query_start + 1));
    std::string pair;
    while (std::getline(pairs, pair, '&')) {
      if (pair.empty()) continue;
      const size_t eq = pair.find('=');
      query.emplace_back(Lower(DecodePercent(pair.substr(0, eq))),
                         eq == std::string::npos ? "" : DecodePercent(pair.substr(eq + 1)));
    }
  }
  std::sort(query.begin(), query.end());
  std::string resource = "/" + account + path;
  for (size_t i = 0; i < query.size(); ++i) {
    if (i > 0 && query[i].first == query[i - 1].first) {
      resource += "," + query[i].second;
    } else {
      resource += "\n" + query[i].first + ":" + query[i].second;
    }
  }
  // VERB, Content-Encoding, -Language, -Length, -MD5, -Type, Date,
  // If-Modified-Since, If-Match, If-None-Match, If-Unmodified-Since, Range;
  // then the x-ms-* headers sorted by name (x-ms-date < x-ms-version).
  return request.method + "\n\n\n\n\n\n\n\n" + request.if_match + "\n\n" +
         request.if_unmodified_since + "\n" + request.range + "\n" + "x-ms-date:" + request.date +
         "\n" + "x-ms-version:" + kAzureApiVersion + "\n" + resource;
}

std::vector<std::string> AzureSignedHeaders(const AzureRequest& request,
                                            const AzureCredentials& credentials) {
  std::vector<std::string> out = {"x-ms-date: " + request.date,
                                  std::string("x-ms-version: ") + kAzureApiVersion};
  if (!credentials.key.empty()) {
    const std::string signature = EncodeBase64(
        HmacSha256Raw(credentials.key, AzureStringToSign(request, credentials.account)));
    out.push_back("Authorization: SharedKey " + credentials.account + ":" + signature);
  }
  return out;
}

std::string AzureSasUrl(const std::string& url, const AzureCredentials& credentials) {
  if (credentials.sas.empty()) return url;
  return url + (url.find('?') == std::string::npos ? "?" : "&") + credentials.sas;
}

std::string AzureDateNow() {
  const time_t now = ::time(nullptr);
  struct tm tm {};
  ::gmtime_r(&now, &tm);
  // Not strftime: %a and %b follow the locale.
  static const char* const kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char* const kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  char text[64];
  std::snprintf(text, sizeof text, "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[tm.tm_wday % 7],
                tm.tm_mday, kMonths[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
                tm.tm_sec);
  return text;
}

}  // namespace b2ndfs::remote
