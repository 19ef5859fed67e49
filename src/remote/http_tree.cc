#include "b2ndfs/remote/http_tree.h"

#include <sys/stat.h>

#include <cctype>
#include <optional>
#include <string_view>

#include "b2ndfs/remote/autoindex.h"
#include "b2ndfs/util/text.h"
#include "object_tree.h"

namespace b2ndfs::remote {
namespace {

std::string LowerPrefix(const std::string& s, size_t n) {
  return ::b2ndfs::text::Lower(std::string_view(s).substr(0, n));
}

}  // namespace

bool IsRemoteUrl(const std::string& source) {
  const std::string lower = LowerPrefix(source, 8);
  return lower.rfind("http://", 0) == 0 || lower.rfind("https://", 0) == 0 ||
         lower.rfind("s3://", 0) == 0 || lower.rfind("az://", 0) == 0;
}

namespace {

// Whether the server answers Range requests, asked of one file at the root
// (the root object, or the first file its index lists): a server that
// ignores them (Python's http.server) serves only containers small enough
// to be read whole. Nothing is said when there is no file to ask about, or
// the question itself fails (the first real read then says why).
std::optional<std::string> RangeTrouble(HttpClient& client, const source::Tree& tree,
                                        const std::string& base,
                                        const std::optional<ObjectInfo>& root_head) {
  std::string url = base;
  std::optional<ObjectInfo> head = root_head;
  if (!head) {
    auto listed = tree.List(tree.root());
    if (!listed.ok()) return std::nullopt;
    for (const source::TreeEntry& e : *listed) {
      if (!S_ISREG(e.st.st_mode)) continue;
      url = base + "/" + e.name;
      auto h = client.Head(url);
      if (h.ok()) head = std::move(h).value();
      break;
    }
  }
  if (!head || head->size < 2) return std::nullopt;
  uint8_t byte = 0;
  const Status s = client.GetRange(url, 1, 1, &byte, *head);
  if (s.error_number() != EOPNOTSUPP) return std::nullopt;
  return RedactUrl(base) +
         " ignores Range requests (it answered a request for one byte with the whole file): "
         "containers of up to 1 MiB are read whole, larger ones cannot be read (their meta.json "
         "says so); serve SOURCE with a web server that answers Range requests (nginx, Apache, "
         "lighttpd)";
}

}  // namespace

Result<std::shared_ptr<source::Tree>> OpenHttpTree(const std::string& url,
                                                   const RemoteOptions& options) {
  const std::string lower = LowerPrefix(url, 8);
  if (lower.rfind("http://", 0) != 0 && lower.rfind("https://", 0) != 0) {
    return InvalidArgument(RedactUrl(url) + " is not an http:// or https:// URL");
  }
  if (url.find_first_of("?#") != std::string::npos) {
    return InvalidArgument(RedactUrl(url) + ": a source URL cannot have a query or fragment");
  }
  HttpOptions http = options.http;
  // Plain web servers (nginx, Apache) answer many ranges in one request;
  // the client stops asking so at the first answer that is not multipart.
  http.multi_range = true;
  auto client = std::make_shared<HttpClient>(std::move(http));
  ObjectTreeConfig config;
  config.root_is_dir = !url.empty() && url.back() == '/';
  config.base = url;
  if (!config.root_is_dir) {
    // A directory named without its '/' (http://host/arrays): web servers
    // redirect it to the URL with one, whose answer is the index page, not
    // a container.
    auto head = client->Head(url);
    if (head.ok() && !head->final_url.empty() && head->final_url.back() == '/' &&
        head->final_url.find_first_of("?#") == std::string::npos) {
      config.root_is_dir = true;
      config.base = head->final_url;
    } else if (head.ok()) {
      config.root_head = std::move(head).value();
    }
  }
  while (config.base.size() > 1 && config.base.back() == '/') config.base.pop_back();
  config.root = RedactUrl(config.base);
  config.disk_cache = OpenConfiguredDiskCache(options);
  config.cache = options.cache;
  // A directory is its index page (the URL with a trailing '/').
  config.list = [client](const std::string& path, const std::string& dir_url) {
    return OnePage([client, path, dir_url]() -> Result<std::vector<IndexEntry>> {
      B2NDFS_ASSIGN_OR_RETURN(const std::string document, client->Get(dir_url + "/"));
      auto entries = ParseAutoindex(document);
      if (!entries.ok()) return Status(EIO, path + ": " + entries.status().message());
      return entries;
    });
  };
  config.is_directory = [client](const std::string&, const std::string& dir_url) -> Result<bool> {
    auto head = client->Head(dir_url + "/");
    if (head.ok()) return true;
    if (head.status().error_number() == ENOENT) return false;
    return head.status();
  };
  const std::string base = config.base;
  std::optional<ObjectInfo> root_head = config.root_head;
  B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<source::Tree> tree,
                          OpenObjectTree(std::move(config), client, options.revalidate));
  if (options.warn) {
    if (auto why = RangeTrouble(*client, *tree, base, root_head)) options.warn(*why);
  }
  return tree;
}

}  // namespace b2ndfs::remote
