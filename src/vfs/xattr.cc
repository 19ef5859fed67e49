#include "xattr.h"

#include <cerrno>
#include <cstdint>
#include <vector>

namespace b2ndfs::vfs {
namespace {

constexpr std::string_view kNames[] = {"shape", "chunkshape", "blockshape", "dtype", "codec"};

// As meta.json writes lists of integers.
std::string JsonList(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(values[i]);
  }
  return out + "]";
}

}  // namespace

Result<std::string> ContainerXattr(const store::Container& container, std::string_view name) {
  if (!IsB2ndXattr(name) || !container.ok()) return Status(ENODATA, std::string(name));
  const std::string_view key = name.substr(kXattrPrefix.size());
  const geometry::ArrayLayout& layout = container.layout();
  if (key == "shape") return JsonList(layout.shape());
  if (key == "chunkshape") return JsonList(layout.chunkshape());
  if (key == "blockshape") return JsonList(layout.blockshape());
  if (key == "dtype") {
    // A simple descr is a quoted Python string in .npy headers ('<f4'): the
    // attribute is the type string itself; structured ones stay lists.
    const std::string& descr = container.npy_descr();
    if (descr.size() >= 2 && descr.front() == '\'' && descr.back() == '\'') {
      return descr.substr(1, descr.size() - 2);
    }
    return descr;
  }
  if (key == "codec") return container.CodecName();
  return Status(ENODATA, std::string(name));
}

std::string ContainerXattrNames() {
  std::string out;
  for (std::string_view key : kNames) {
    out += kXattrPrefix;
    out += key;
    out += '\0';
  }
  return out;
}

}  // namespace b2ndfs::vfs
