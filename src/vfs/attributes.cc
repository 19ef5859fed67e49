#include "attributes.h"

#include <unistd.h>

#include <optional>

#include "b2ndfs/views/view.h"

namespace b2ndfs::vfs {

struct stat ContainerStat(const struct stat& src, Ino ino, bool directory, int64_t size) {
  struct stat st {};
  st.st_ino = ino;
  st.st_uid = src.st_uid;
  st.st_gid = src.st_gid;
  st.st_atim = src.st_atim;
  st.st_mtim = src.st_mtim;
  st.st_ctim = src.st_ctim;
  st.st_blksize = 128 * 1024;
  const mode_t read_bits = src.st_mode & 0444;
  if (directory) {
    st.st_mode = S_IFDIR | read_bits | (read_bits >> 2);
    st.st_nlink = 2;
  } else {
    st.st_mode = S_IFREG | read_bits;
    st.st_nlink = 1;
    st.st_size = size;
    st.st_blocks = (size + 511) / 512;
  }
  return st;
}

Attr InsideAttributes(const Generation& generation, const store::Container& container,
                      const views::Node& view, Ino ino, double timeout) {
  Attr attr;
  const bool directory = view.IsDirectory();
  const std::optional<struct stat> derived = container.derived_readers();
  const struct stat& src = derived ? *derived : generation.source_stat();
  attr.st = ContainerStat(src, ino, directory, directory ? 0 : view.Size(container));
  // What the container takes on disk is `data`'s (the source's blocks); the
  // other views show the same items again and take none, so that du of a
  // mount adds up to its source, not to every view's bytes (README.md,
  // "Layout").
  if (!directory) {
    const struct stat& own = generation.source_stat();
    const blkcnt_t source_blocks =
        own.st_blocks > 0 ? own.st_blocks : static_cast<blkcnt_t>((own.st_size + 511) / 512);
    attr.st.st_blocks = view.name() == "data" ? source_blocks : 0;
  }
  attr.timeout = timeout;
  return attr;
}

Attr ControlAttributes(const struct stat& root, Ino ino, bool directory, bool private_file,
                       int64_t size) {
  Attr attr;
  struct stat& st = attr.st;
  st = root;
  st.st_ino = ino;
  st.st_nlink = directory ? 2 : 1;
  if (directory) {
    st.st_mode = S_IFDIR | 0555;
    st.st_size = 0;
    st.st_blocks = 0;
  } else {
    st.st_mode = S_IFREG | (private_file ? 0400 : 0444);
    if (private_file) {
      st.st_uid = ::geteuid();
      st.st_gid = ::getegid();
    }
    st.st_size = static_cast<off_t>(size);
  }
  attr.timeout = 0;
  return attr;
}

}  // namespace b2ndfs::vfs
