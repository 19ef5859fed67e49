#include "b2ndfs/remote/azure_tree.h"

#include <cctype>
#include <ctime>

#include "azure_auth.h"
#include "b2ndfs/remote/autoindex.h"
#include "b2ndfs/remote/azure_xml.h"
#include "b2ndfs/remote/s3_tree.h"
#include "b2ndfs/util/text.h"
#include "object_tree.h"
#include "prefix_listing.h"

namespace b2ndfs::remote {
namespace {

using ::b2ndfs::text::Lower;

// Each '/'-separated segment percent-encoded, the slashes kept.
std::string EncodeBlobKey(const std::string& key) { return PercentEncode(key, true); }

// The blob service hosts of the Azure clouds: ACCOUNT + one of these.
constexpr const char* kServiceSuffixes[] = {".blob.core.windows.net", ".blob.core.chinacloudapi.cn",
                                            ".blob.core.usgovcloudapi.net"};

bool ValidAccount(const std::string& account) {
  if (account.size() < 3 || account.size() > 24) return false;
  for (unsigned char c : account) {
    if (!std::islower(c) && !std::isdigit(c)) return false;
  }
  return true;
}

bool ValidContainer(const std::string& container) {
  if (container == "$root" || container == "$web" || container == "$logs") return true;
  if (container.size() < 3 || container.size() > 63) return false;
  for (unsigned char c : container) {
    if (!std::islower(c) && !std::isdigit(c) && c != '-') return false;
  }
  return container.front() != '-' && container.back() != '-' &&
         container.find("--") == std::string::npos;
}

// "scheme://host" and the rest ("/PATH"), or nullopt-like empty scheme.
struct SplitUrl {
  std::string scheme;  // lower case
  std::string host;    // as given
  std::string path;    // from the '/' after the host, or ""
};
SplitUrl Split(const std::string& url) {
  SplitUrl out;
  const size_t sep = url.find("://");
  if (sep == std::string::npos) return out;
  out.scheme = Lower(url.substr(0, sep));
  const size_t slash = url.find('/', sep + 3);
  out.host = url.substr(sep + 3, slash == std::string::npos ? std::string::npos : slash - sep - 3);
  if (slash != std::string::npos) out.path = url.substr(slash);
  return out;
}

// The account of a blob service host, or "".
std::string ServiceAccount(const std::string& host) {
  const std::string lower = Lower(host);
  for (const char* suffix : kServiceSuffixes) {
    const std::string s = suffix;
    if (lower.size() > s.size() && lower.compare(lower.size() - s.size(), s.size(), s) == 0) {
      const std::string account = lower.substr(0, lower.size() - s.size());
      if (account.find('.') == std::string::npos) return account;
    }
  }
  return "";
}

// What to check when the service refuses the requests.
std::string Hint(const AzureCredentials& credentials, const Status& status) {
  // Azure answers an anonymous request for a private container's blobs
  // with 404, as if nothing were there.
  if (status.error_number() == ENOENT && credentials.anonymous()) {
    return "; or the container is not public (no_sign)";
  }
  if (status.error_number() != EACCES) return "";
  if (credentials.anonymous()) {
    return "; the container is not public: set AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, "
           "or give credentials=FILE";
  }
  return std::string("; check the ") +
         (credentials.key.empty() ? "SAS token (its expiry, and permissions r and l)"
                                  : "account key") +
         " from " + credentials.origin;
}

// One page of the blobs and blob prefixes directly under `prefix`, from
// `marker` (List Blobs).
Result<ListedPage> FetchAzurePage(HttpClient& client, const std::string& container_url,
                                  const std::string& prefix, const std::string& marker,
                                  int max_results) {
  B2NDFS_ASSIGN_OR_RETURN(const std::string document,
                          client.Get(AzureListUrl(container_url, prefix, marker, max_results)));
  auto page = ParseListBlobs(document);
  if (!page.ok()) {
    return Status(EIO, "the listing of '" + prefix + "': " + page.status().message());
  }
  ListedPage out;
  for (auto& b : page->blobs) {
    out.keys.push_back({std::move(b.name), b.size, b.mtime, std::move(b.etag)});
  }
  out.prefixes = std::move(page->prefixes);
  out.more = !page->next_marker.empty();
  out.next = std::move(page->next_marker);
  return out;
}

}  // namespace

bool IsAzureUrl(const std::string& url) {
  const SplitUrl split = Split(url);
  if (split.scheme == "az") return true;
  return (split.scheme == "https" || split.scheme == "http") && !ServiceAccount(split.host).empty();
}

Result<AzureUrl> ParseAzureUrl(const std::string& url) {
  const SplitUrl split = Split(url);
  AzureUrl out;
  std::string rest;  // CONTAINER[/PREFIX]
  if (split.scheme == "az") {
    out.account = Lower(split.host);
    rest = split.path.empty() ? "" : split.path.substr(1);
  } else if ((split.scheme == "https" || split.scheme == "http") &&
             !ServiceAccount(split.host).empty()) {
    out.account = ServiceAccount(split.host);
    out.service = split.scheme + "://" + Lower(split.host);
    rest = split.path.empty() ? "" : split.path.substr(1);
  } else {
    return InvalidArgument(RedactUrl(url) + " is not an az:// URL");
  }
  const std::string shown = "az://" + out.account;
  if (url.find_first_of("?#") != std::string::npos) {
    return InvalidArgument(shown +
                           ": a source URL cannot have a query (a SAS token goes into "
                           "AZURE_STORAGE_SAS_TOKEN or credentials=FILE: the command line is "
                           "public)");
  }
  if (!ValidAccount(out.account)) {
    return InvalidArgument(shown + ": not a storage account name (3 to 24 letters and digits)");
  }
  const size_t slash = rest.find('/');
  out.container = rest.substr(0, slash);
  if (slash != std::string::npos) out.prefix = rest.substr(slash + 1);
  if (!ValidContainer(out.container)) {
    return InvalidArgument(shown + "/" + out.container.substr(0, 64) +
                           ": not a container name (3 to 63 lower-case letters, digits and "
                           "'-'); the URL is az://ACCOUNT/CONTAINER[/PREFIX]");
  }
  return out;
}

Result<std::string> AzureContainerUrl(const AzureUrl& url, const std::string& endpoint) {
  std::string service;
  if (!endpoint.empty()) {
    const SplitUrl split = Split(endpoint);
    if ((split.scheme != "http" && split.scheme != "https") || split.host.empty() ||
        endpoint.find_first_of("?#") != std::string::npos) {
      return InvalidArgument("endpoint=" + RedactUrl(endpoint) +
                             ": expected an http:// or https:// URL without a query");
    }
    service = endpoint;
    while (!service.empty() && service.back() == '/') service.pop_back();
    std::string path = split.path;
    while (!path.empty() && path.back() == '/') path.pop_back();
    const std::string host = Lower(split.host);
    const bool names_account = host.rfind(url.account + ".", 0) == 0 ||
                               (path.size() > url.account.size() &&
                                path.compare(path.size() - url.account.size() - 1,
                                             std::string::npos, "/" + url.account) == 0);
    if (!names_account) service += "/" + url.account;
  } else if (!url.service.empty()) {
    service = url.service;
  } else {
    service = "https://" + url.account + ".blob.core.windows.net";
  }
  return service + "/" + EncodeBlobKey(url.container);
}

std::string AzureListUrl(const std::string& container_url, const std::string& prefix,
                         const std::string& marker, int max_results) {
  std::string url = container_url + "?restype=container&comp=list&delimiter=%2F";
  if (!marker.empty()) url += "&marker=" + PercentEncode(marker, false);
  if (max_results > 0) url += "&maxresults=" + std::to_string(max_results);
  if (!prefix.empty()) url += "&prefix=" + PercentEncode(prefix, false);
  return url;
}

Result<std::shared_ptr<source::Tree>> OpenAzureTree(const std::string& url,
                                                    const AzureOptions& options,
                                                    std::string* origin) {
  B2NDFS_ASSIGN_OR_RETURN(const AzureUrl az, ParseAzureUrl(url));
  B2NDFS_ASSIGN_OR_RETURN(const std::string container_url, AzureContainerUrl(az, options.endpoint));
  AzureSettings settings;
  settings.account = az.account;
  settings.credentials_file = options.credentials_file;
  settings.no_sign = options.no_sign;
  const std::string shown = "az://" + az.account + "/" + az.container;
  auto credentials =
      ResolveAzureCredentials(settings, options.env ? options.env : ProcessEnvironment());
  if (!credentials.ok()) {
    return Status(credentials.status().error_number(),
                  shown + ": " + credentials.status().message());
  }
  if (origin != nullptr) *origin = credentials->origin;
  HttpOptions http = options.remote.http;
  http.sign = [c = *credentials](HttpOptions::Attempt& attempt) {
    AzureRequest request{
        attempt.method, attempt.url, attempt.range, attempt.if_match, attempt.if_unmodified_since,
        AzureDateNow()};
    attempt.url = AzureSasUrl(attempt.url, c);
    return AzureSignedHeaders(request, c);
  };
  auto client = std::make_shared<HttpClient>(std::move(http));

  std::string prefix = az.prefix;
  const bool explicit_dir = prefix.empty() || prefix.back() == '/';
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  ObjectTreeConfig config;
  config.root = shown + (prefix.empty() ? "" : "/" + prefix);
  config.base = container_url + (prefix.empty() ? "" : "/" + EncodeBlobKey(prefix));
  config.root_is_dir = true;
  config.disk_cache = OpenConfiguredDiskCache(options.remote);
  config.cache = options.remote.cache;
  if (!explicit_dir) {
    // A PREFIX naming a blob is one container; else a directory. (A Data
    // Lake account answers for its directories too: an empty blob.)
    auto head = client->Head(config.base);
    if (head.ok() && head->size != 0) {
      config.root_is_dir = false;
      config.root_head = std::move(head).value();
    } else if (!head.ok() && head.status().error_number() != ENOENT) {
      return Status(head.status().error_number(), config.root + ": " + head.status().message() +
                                                      Hint(*credentials, head.status()));
    }
  }
  const std::string root_prefix = prefix.empty() ? "" : prefix + "/";
  const int64_t start_time = static_cast<int64_t>(::time(nullptr));
  auto key_prefix_of = [root = config.root, root_prefix](const std::string& path) {
    return root_prefix + (path.size() > root.size() ? path.substr(root.size() + 1) + "/" : "");
  };
  config.list = [client, container_url, key_prefix_of, start_time, shown](const std::string& path,
                                                                          const std::string&) {
    const std::string key_prefix = key_prefix_of(path);
    auto fetch = [client, container_url, key_prefix](const std::string& marker) {
      return FetchAzurePage(*client, container_url, key_prefix, marker, 0);
    };
    // Blob storage has no directories: a prefix with nothing under it (not
    // even a folder marker) is not there.
    std::string missing =
        key_prefix.empty() ? "" : path + ": no blobs under " + shown + "/" + key_prefix;
    return MakePrefixPages(path, key_prefix, start_time, std::move(fetch), std::move(missing),
                           true);
  };
  config.is_directory = [client, container_url, key_prefix_of](const std::string& path,
                                                               const std::string&) {
    const std::string key_prefix = key_prefix_of(path);
    auto fetch = [&](const std::string& marker) {
      return FetchAzurePage(*client, container_url, key_prefix, marker, 2);
    };
    return PrefixHasEntries(key_prefix, fetch, true);
  };
  auto tree = OpenObjectTree(std::move(config), std::move(client), options.remote.revalidate);
  if (!tree.ok()) {
    return Status(tree.status().error_number(),
                  tree.status().message() + Hint(*credentials, tree.status()));
  }
  return tree;
}

}  // namespace b2ndfs::remote
