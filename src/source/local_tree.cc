// The local source tree: stat(), a Boost.Filesystem listing, frame files and
// sparse-frame directories read through the mount-wide descriptor cache.
#include <sys/stat.h>

#include <algorithm>
#include <boost/filesystem.hpp>
#include <cerrno>
#include <cstring>

#include "b2ndfs/source/descriptor_cache.h"
#include "b2ndfs/source/tree.h"
#include "b2ndfs/util/file.h"
#include "local_internal.h"

namespace b2ndfs::source {
namespace {

Status Errno(const std::string& what) {
  const int e = errno;
  return Status(e, what + ": " + std::strerror(e));
}

using internal::FileSignature;

// A local plain file is read through its own descriptor: it keeps reading the
// version it opened even when the path is replaced.
class LocalFile final : public PlainFile {
 public:
  LocalFile(File file, Signature version) : file_(std::move(file)), version_(std::move(version)) {}
  const Signature& version() const override { return version_; }
  Result<size_t> ReadUpTo(int64_t offset, uint8_t* out, size_t length) const override {
    return file_.ReadUpTo(offset, out, length);
  }

 private:
  const File file_;
  const Signature version_;
};

class LocalTree final : public Tree {
 public:
  LocalTree(std::string root, size_t max_descriptors)
      : root_(std::move(root)),
        descriptors_(max_descriptors > 0 ? max_descriptors : DefaultDescriptorCapacity()) {}

  const std::string& root() const override { return root_; }

  // A symbolic link shows what reading through it takes: its target's
  // attributes, bound by the directories the link leads through (a user
  // must not reach, by a link of their own, a file in a directory they
  // cannot search).
  Result<struct stat> Stat(const std::string& path) const override {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) return Errno(path);
    if (!S_ISLNK(st.st_mode)) return st;
    return internal::WalkBeneath(root_, path, /*confined=*/false);
  }

  Result<struct stat> StatBeneath(const std::string& path, bool confined) const override {
    return internal::WalkBeneath(root_, path, confined);
  }

  Result<std::vector<TreeEntry>> List(const std::string& path) const override {
    // Boost.Filesystem lists; its errors are caught here, at the module edge.
    boost::system::error_code ec;
    boost::filesystem::directory_iterator it(path, ec);
    auto failed = [&] {
      return Status(ec.value() > 0 ? ec.value() : EIO, path + ": " + ec.message());
    };
    if (ec) return failed();
    std::vector<TreeEntry> entries;
    for (; it != boost::filesystem::directory_iterator(); it.increment(ec)) {
      if (ec) return failed();
      TreeEntry entry;
      entry.name = it->path().filename().string();
      // Vanished, or a dangling link.
      auto st = Stat(it->path().string());
      if (!st.ok()) continue;
      entry.st = *st;
      if (!S_ISDIR(entry.st.st_mode) && !S_ISREG(entry.st.st_mode)) continue;
      entries.push_back(std::move(entry));
    }
    std::sort(entries.begin(), entries.end(),
              [](const TreeEntry& a, const TreeEntry& b) { return a.name < b.name; });
    return entries;
  }

  Result<Signature> Probe(const std::string& path) const override { return ProbeLocal(path); }

  // Opened as it is now (a stat, no cheaper with the probe's answer).
  Result<std::shared_ptr<const ByteSource>> OpenContainer(const std::string& path,
                                                          const Signature*) const override {
    return OpenLocal(path, &descriptors_);
  }

  Result<std::shared_ptr<const PlainFile>> OpenFile(const std::string& path) const override {
    B2NDFS_ASSIGN_OR_RETURN(File file, File::OpenReadOnly(path));
    B2NDFS_ASSIGN_OR_RETURN(struct stat st, file.Stat());
    if (!S_ISREG(st.st_mode)) return NotFound(path);
    return std::shared_ptr<const PlainFile>(
        std::make_shared<LocalFile>(std::move(file), FileSignature(st)));
  }

  std::string StatsJson() const override {
    const DescriptorStats d = descriptors_.stats();
    auto kv = [](const char* key, uint64_t value, bool last = false) {
      return std::string("    \"") + key + "\": " + std::to_string(value) + (last ? "\n" : ",\n");
    };
    std::string out = "  \"descriptors\": {\n";
    out += kv("open", d.open_now);
    out += kv("capacity", d.capacity);
    out += kv("opens", d.opens);
    out += kv("hits", d.hits);
    out += kv("evictions", d.evictions, true);
    out += "  },\n";
    return out;
  }

 private:
  const std::string root_;
  mutable DescriptorCache descriptors_;
};

}  // namespace

std::shared_ptr<Tree> MakeLocalTree(std::string root, size_t max_descriptors) {
  return std::make_shared<LocalTree>(std::move(root), max_descriptors);
}

}  // namespace b2ndfs::source
