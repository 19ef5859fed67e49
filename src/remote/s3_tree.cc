#include "b2ndfs/remote/s3_tree.h"

#include <cctype>
#include <ctime>

#include "b2ndfs/remote/autoindex.h"
#include "b2ndfs/remote/s3_xml.h"
#include "object_tree.h"
#include "prefix_listing.h"

namespace b2ndfs::remote {
namespace {

// Each '/'-separated segment percent-encoded, the slashes kept.
std::string EncodeKey(const std::string& key) { return AwsUriEncode(key, false); }

bool ValidBucket(const std::string& bucket) {
  if (bucket.size() < 3 || bucket.size() > 63) return false;
  for (unsigned char c : bucket) {
    if (!std::isalnum(c) && c != '.' && c != '-' && c != '_') return false;
  }
  return true;
}

std::string AmzDateNow() {
  const time_t now = ::time(nullptr);
  struct tm tm {};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &tm);
  return text;
}

// One page of the listing of `prefix` from `token` (ListObjectsV2).
Result<ListedPage> FetchS3Page(HttpClient& client, const std::string& bucket_url,
                               const std::string& prefix, const std::string& token, int max_keys) {
  B2NDFS_ASSIGN_OR_RETURN(const std::string document,
                          client.Get(S3ListUrl(bucket_url, prefix, token, max_keys)));
  auto page = ParseListObjectsV2(document);
  if (!page.ok()) {
    return Status(EIO, "the listing of '" + prefix + "': " + page.status().message());
  }
  ListedPage out;
  for (auto& o : page->contents) {
    out.keys.push_back({std::move(o.key), o.size, o.mtime, std::move(o.etag)});
  }
  out.prefixes = std::move(page->common_prefixes);
  out.more = page->truncated;
  out.next = std::move(page->next_token);
  return out;
}

}  // namespace

Result<S3Url> ParseS3Url(const std::string& url) {
  std::string scheme = url.substr(0, 5);
  for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme != "s3://") return InvalidArgument(url + " is not an s3:// URL");
  const std::string rest = url.substr(5);
  if (rest.find_first_of("?#") != std::string::npos) {
    return InvalidArgument("s3://" + rest.substr(0, rest.find_first_of("?#")) +
                           ": a source URL cannot have a query or fragment");
  }
  S3Url out;
  const size_t slash = rest.find('/');
  out.bucket = rest.substr(0, slash);
  if (slash != std::string::npos) out.prefix = rest.substr(slash + 1);
  if (!ValidBucket(out.bucket)) {
    return InvalidArgument("s3://" + out.bucket +
                           ": not a bucket name (3 to 63 letters, digits, "
                           "'.', '-')");
  }
  return out;
}

Result<std::string> S3BucketUrl(const std::string& bucket, const std::string& endpoint,
                                const std::string& region) {
  if (!endpoint.empty()) {
    std::string lower = endpoint.substr(0, 8);
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if ((lower.rfind("http://", 0) != 0 && lower.rfind("https://", 0) != 0) ||
        endpoint.find_first_of("?#") != std::string::npos) {
      return InvalidArgument("endpoint=" + RedactUrl(endpoint) +
                             ": expected an http:// or https:// URL without a query");
    }
    std::string base = endpoint;
    while (!base.empty() && base.back() == '/') base.pop_back();
    return base + "/" + EncodeKey(bucket);
  }
  for (unsigned char c : region) {
    if (!std::isalnum(c) && c != '-') return InvalidArgument("region=" + region + ": not a region");
  }
  if (region.empty()) return InvalidArgument("no region");
  // Names that are not DNS labels (dots break the certificate's wildcard;
  // upper case and '_' exist in old buckets) are addressed path-style.
  bool dns_label = true;
  for (unsigned char c : bucket)
    dns_label = dns_label && (std::islower(c) || std::isdigit(c) || c == '-');
  if (!dns_label) {
    return "https://s3." + region + ".amazonaws.com/" + EncodeKey(bucket);
  }
  return "https://" + bucket + ".s3." + region + ".amazonaws.com";
}

std::string S3ListUrl(const std::string& bucket_url, const std::string& prefix,
                      const std::string& continuation_token, int max_keys) {
  // Virtual-hosted: the bucket is the host, the path "/". Sorted by name.
  const size_t host = bucket_url.find("://");
  const bool has_path =
      host != std::string::npos && bucket_url.find('/', host + 3) != std::string::npos;
  std::string url = bucket_url + (has_path ? "?" : "/?");
  if (!continuation_token.empty()) {
    url += "continuation-token=" + AwsUriEncode(continuation_token, true) + "&";
  }
  url += "delimiter=%2F&list-type=2";
  if (max_keys > 0) url += "&max-keys=" + std::to_string(max_keys);
  url += "&prefix=" + AwsUriEncode(prefix, true);
  return url;
}

std::vector<std::string> S3SignedHeaders(const std::string& method, const std::string& url,
                                         const std::string& range,
                                         const AwsCredentials& credentials,
                                         const std::string& region, const std::string& amz_date) {
  SigV4Request request;
  request.method = method;
  const size_t scheme = url.find("://");
  const size_t authority = scheme == std::string::npos ? 0 : scheme + 3;
  size_t path_start = url.find('/', authority);
  const size_t query_start = url.find('?', authority);
  if (path_start == std::string::npos || path_start > query_start) path_start = query_start;
  std::string host = url.substr(
      authority, path_start == std::string::npos ? std::string::npos : path_start - authority);
  if (const size_t at = host.rfind('@'); at != std::string::npos) host.erase(0, at + 1);
  if (path_start == std::string::npos || path_start == query_start) {
    request.path = "/";
  } else {
    request.path =
        url.substr(path_start,
                   query_start == std::string::npos ? std::string::npos : query_start - path_start);
  }
  if (query_start != std::string::npos) {
    const std::string query = url.substr(query_start + 1);
    size_t pos = 0;
    while (pos <= query.size()) {
      size_t amp = query.find('&', pos);
      if (amp == std::string::npos) amp = query.size();
      const std::string pair = query.substr(pos, amp - pos);
      if (!pair.empty()) {
        const size_t eq = pair.find('=');
        request.query.emplace_back(
            DecodePercent(pair.substr(0, eq)),
            eq == std::string::npos ? "" : DecodePercent(pair.substr(eq + 1)));
      }
      pos = amp + 1;
    }
  }
  const std::string payload = Sha256Hex("");
  request.payload_hash = payload;
  request.headers = {{"host", host}, {"x-amz-content-sha256", payload}, {"x-amz-date", amz_date}};
  if (!range.empty()) request.headers.emplace_back("range", range);
  const SigV4Signature s = SignV4(request, credentials, region, "s3", amz_date);
  std::vector<std::string> out = {"Host: " + host, "x-amz-content-sha256: " + payload,
                                  "x-amz-date: " + amz_date};
  if (!credentials.session_token.empty()) {
    out.push_back("x-amz-security-token: " + credentials.session_token);
  }
  out.push_back("Authorization: " + s.authorization);
  return out;
}

Result<std::shared_ptr<source::Tree>> OpenS3Tree(const std::string& url, const S3Options& options) {
  B2NDFS_ASSIGN_OR_RETURN(const S3Url s3, ParseS3Url(url));
  B2NDFS_ASSIGN_OR_RETURN(const std::string bucket_url,
                          S3BucketUrl(s3.bucket, options.endpoint, options.region));
  HttpOptions http = options.remote.http;
  if (options.credential_provider) {
    // Every attempt asks for the keys of the moment (renewed before they
    // expire, see aws_credentials.h); Current() never waits for the network.
    http.extra_headers = [provider = options.credential_provider, region = options.region](
                             const std::string& method, const std::string& request_url,
                             const std::string& range) {
      return S3SignedHeaders(method, request_url, range, provider->Current(), region, AmzDateNow());
    };
  } else if (options.credentials) {
    http.extra_headers = [credentials = *options.credentials, region = options.region](
                             const std::string& method, const std::string& request_url,
                             const std::string& range) {
      return S3SignedHeaders(method, request_url, range, credentials, region, AmzDateNow());
    };
  }
  auto client = std::make_shared<HttpClient>(std::move(http));

  std::string prefix = s3.prefix;
  const bool explicit_dir = prefix.empty() || prefix.back() == '/';
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  ObjectTreeConfig config;
  config.root = "s3://" + s3.bucket + (prefix.empty() ? "" : "/" + prefix);
  config.base = bucket_url + (prefix.empty() ? "" : "/" + EncodeKey(prefix));
  config.root_is_dir = true;
  config.disk_cache = OpenConfiguredDiskCache(options.remote);
  config.cache = options.remote.cache;
  if (!explicit_dir) {
    // A PREFIX naming an object is one container; else a directory.
    auto head = client->Head(config.base);
    if (head.ok()) {
      config.root_is_dir = false;
      config.root_head = std::move(head).value();
    } else if (head.status().error_number() != ENOENT) {
      return Status(head.status().error_number(), config.root + ": " + head.status().message());
    }
  }
  const std::string root_prefix = prefix.empty() ? "" : prefix + "/";
  const int64_t start_time = static_cast<int64_t>(::time(nullptr));
  auto key_prefix_of = [root = config.root, root_prefix](const std::string& path) {
    return root_prefix + (path.size() > root.size() ? path.substr(root.size() + 1) + "/" : "");
  };
  const std::string bucket_shown = "s3://" + s3.bucket + "/";
  config.list = [client, bucket_url, key_prefix_of, start_time, bucket_shown](
                    const std::string& path, const std::string&) {
    const std::string key_prefix = key_prefix_of(path);
    auto fetch = [client, bucket_url, key_prefix](const std::string& token) {
      return FetchS3Page(*client, bucket_url, key_prefix, token, 0);
    };
    // S3 has no directories: a prefix with nothing under it is not there.
    std::string missing =
        key_prefix.empty() ? "" : path + ": no objects under " + bucket_shown + key_prefix;
    return MakePrefixPages(path, key_prefix, start_time, std::move(fetch), std::move(missing),
                           false);
  };
  config.is_directory = [client, bucket_url, key_prefix_of](const std::string& path,
                                                            const std::string&) {
    const std::string key_prefix = key_prefix_of(path);
    auto fetch = [&](const std::string& token) {
      return FetchS3Page(*client, bucket_url, key_prefix, token, 2);
    };
    return PrefixHasEntries(key_prefix, fetch, false);
  };
  return OpenObjectTree(std::move(config), std::move(client), options.remote.revalidate);
}

}  // namespace b2ndfs::remote
