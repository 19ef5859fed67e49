// The walk behind LocalTree::Stat (of a symbolic link) and StatBeneath: a
// path resolved one component at a time, as the kernel would for a reader,
// keeping every directory searched on the way (provenance.h).
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "b2ndfs/source/provenance.h"
#include "local_internal.h"

namespace b2ndfs::source::internal {
namespace {

// As the kernel's limit on links followed in one resolution.
constexpr int kMaxLinks = 40;

std::vector<std::string> Components(const std::string& path) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= path.size()) {
    size_t end = path.find('/', begin);
    if (end == std::string::npos) end = path.size();
    if (end > begin) out.push_back(path.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

std::string Join(const std::vector<std::string>& parts) {
  if (parts.empty()) return "/";
  std::string out;
  for (const std::string& p : parts) out += "/" + p;
  return out;
}

bool Below(const std::string& path, const std::string& root) {
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          (root == "/" || path[root.size()] == '/'));
}

}  // namespace

Result<struct stat> WalkBeneath(const std::string& root, const std::string& path, bool confined) {
  if (!Below(path, root)) return Status(EXDEV, path + ": not below " + root);
  const std::vector<std::string> root_parts = Components(root);
  std::vector<std::string> at = root_parts;
  std::deque<std::string> pending;
  for (std::string& p : Components(path.substr(root.size()))) pending.push_back(std::move(p));
  // The root itself is not among them: whoever reads through the mount
  // passed its root already.
  std::vector<struct stat> searched;
  std::optional<struct stat> final_st;
  int links = 0;
  while (!pending.empty()) {
    std::string part = std::move(pending.front());
    pending.pop_front();
    if (part == ".") continue;
    if (part == "..") {
      if (confined && at.size() <= root_parts.size()) {
        return Status(EXDEV, path + ": leads out of " + root);
      }
      if (!at.empty()) at.pop_back();
      if (pending.empty()) final_st.reset();
      continue;
    }
    at.push_back(part);
    const std::string here = Join(at);
    struct stat st;
    if (::lstat(here.c_str(), &st) != 0) {
      const int e = errno;
      return Status(e, here + ": " + std::strerror(e));
    }
    if (S_ISLNK(st.st_mode)) {
      at.pop_back();
      if (++links > kMaxLinks) return Status(ELOOP, path + ": too many symbolic links");
      char target[PATH_MAX];
      const ssize_t n = ::readlink(here.c_str(), target, sizeof(target) - 1);
      if (n < 0) {
        const int e = errno;
        return Status(e, here + ": " + std::strerror(e));
      }
      const std::string link(target, static_cast<size_t>(n));
      std::vector<std::string> parts = Components(link);
      if (!link.empty() && link.front() == '/') {
        if (confined && !Below(link, root)) {
          return Status(EXDEV, here + ": a symbolic link out of " + root);
        }
        at.clear();
        if (confined) {
          at = root_parts;
          parts = Components(link.substr(root.size()));
        }
      }
      pending.insert(pending.begin(), parts.begin(), parts.end());
      continue;
    }
    if (pending.empty()) {
      final_st = st;
    } else {
      if (!S_ISDIR(st.st_mode)) return Status(ENOTDIR, here + ": not a directory");
      searched.push_back(SearchedAs(st));
    }
  }
  if (!final_st) {
    struct stat st;
    if (::stat(Join(at).c_str(), &st) != 0) {
      const int e = errno;
      return Status(e, path + ": " + std::strerror(e));
    }
    final_st = st;
  }
  std::vector<struct stat> inputs{*final_st};
  inputs.insert(inputs.end(), searched.begin(), searched.end());
  return BoundBy(inputs);
}

}  // namespace b2ndfs::source::internal
