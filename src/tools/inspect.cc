// b2ndfs-inspect's pieces over vfs::Filesystem (inspect.h); the command
// line is inspect_main.cc's.
#include "inspect.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "b2ndfs/source/tree.h"
#include "b2ndfs/stores/store_tree.h"

namespace b2ndfs::inspect {

Inspected::Inspected(const std::string& source) : cache(256u << 20), decompressors(4) {
  store.cache = &cache;
  store.decompressors = &decompressors;
  vfs::Options options;
  options.source = source;
  // As the daemon builds it: python-blosc2's stores shown as directories of
  // their leaves; a CTable's valid/ files read through `store`.
  options.tree = stores::MakeStoreTree(source::MakeLocalTree(source), &store);
  fs = std::make_unique<vfs::Filesystem>(options, &store);
}

Result<vfs::Ino> Walk(vfs::Filesystem& fs, const std::string& path) {
  vfs::Ino ino = vfs::kRootIno;
  size_t pos = 0;
  while (pos <= path.size()) {
    const size_t slash = path.find('/', pos);
    const std::string part =
        path.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
    if (!part.empty()) {
      auto attr = fs.Lookup(ino, part);
      if (!attr.ok()) return attr.status();
      ino = attr->st.st_ino;
    }
    if (slash == std::string::npos) break;
    pos = slash + 1;
  }
  return ino;
}

Status ReadFile(vfs::Filesystem& fs, vfs::Ino ino, int64_t offset, int64_t length,
                const Sink& out) {
  B2NDFS_ASSIGN_OR_RETURN(vfs::Attr attr, fs.GetAttr(ino));
  if (S_ISDIR(attr.st.st_mode)) return Status(EISDIR, "a directory (b2ndfs-inspect ls lists it)");
  B2NDFS_ASSIGN_OR_RETURN(vfs::FileHandle handle, fs.Open(ino, 0));
  if (length < 0) length = attr.st.st_size - offset;
  std::vector<uint8_t> buffer(1 << 20);
  while (length > 0) {
    const size_t want =
        static_cast<size_t>(std::min<int64_t>(length, static_cast<int64_t>(buffer.size())));
    B2NDFS_ASSIGN_OR_RETURN(size_t n, fs.Read(handle, offset, want, buffer.data()));
    if (n == 0) break;
    B2NDFS_RETURN_IF_ERROR(out(buffer.data(), n));
    offset += static_cast<int64_t>(n);
    length -= static_cast<int64_t>(n);
  }
  return Status::Ok();
}

Result<std::string> ReadText(vfs::Filesystem& fs, vfs::Ino ino) {
  std::string text;
  B2NDFS_RETURN_IF_ERROR(ReadFile(fs, ino, 0, -1, [&](const uint8_t* p, size_t n) {
    text.append(reinterpret_cast<const char*>(p), n);
    return Status::Ok();
  }));
  return text;
}

Result<std::string> MetaJson(vfs::Filesystem& fs, const std::string& dir) {
  B2NDFS_ASSIGN_OR_RETURN(vfs::Ino ino, Walk(fs, dir.empty() ? "meta.json" : dir + "/meta.json"));
  return ReadText(fs, ino);
}

Result<std::vector<vfs::DirEntry>> List(vfs::Filesystem& fs, vfs::Ino ino) {
  B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<vfs::DirListing> listing, fs.OpenDir(ino));
  std::vector<vfs::DirEntry> entries;
  for (size_t i = 0;; ++i) {
    B2NDFS_ASSIGN_OR_RETURN(bool has, listing->Has(i));
    if (!has) break;
    entries.push_back(listing->at(i));
  }
  return entries;
}

namespace {

// Where the value of the first `"key": ` starts, or npos.
size_t ValueAt(const std::string& json, const std::string& key) {
  const std::string quoted = "\"" + key + "\": ";
  const size_t at = json.find(quoted);
  return at == std::string::npos ? at : at + quoted.size();
}

}  // namespace

std::string StringField(const std::string& json, const std::string& key) {
  const size_t at = ValueAt(json, key);
  if (at == std::string::npos || at >= json.size() || json[at] != '"') return "";
  std::string value;
  for (size_t i = at + 1; i < json.size() && json[i] != '"'; ++i) {
    if (json[i] == '\\' && i + 1 < json.size()) ++i;
    value += json[i];
  }
  return value;
}

std::string ScalarField(const std::string& json, const std::string& key) {
  const size_t at = ValueAt(json, key);
  if (at == std::string::npos) return "";
  const size_t end = json.find_first_of(",\n}]", at);
  return json.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

std::string ErrorOf(const std::string& meta_json) {
  const size_t brace = meta_json.find_first_not_of(" \t\r\n");
  const std::string key = "\"error\"";
  if (brace == std::string::npos || meta_json[brace] != '{') return "";
  const size_t at = meta_json.find_first_not_of(" \t\r\n", brace + 1);
  if (at == std::string::npos || meta_json.compare(at, key.size(), key) != 0) return "";
  const std::string reason = StringField(meta_json.substr(at), "error");
  return reason.empty() ? "cannot be decoded" : reason;
}

std::string Unprefixed(const std::string& message, const std::string& path) {
  const std::string prefix = path + ": ";
  return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
}

}  // namespace b2ndfs::inspect
