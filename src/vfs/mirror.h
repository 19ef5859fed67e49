// Private to vfs: the mirrored part of the tree (SOURCE's own directories
// and files) and what each entry is shown as, decided from its name and
// stat() alone, without opening any container.
#pragma once

#include <sys/stat.h>

#include <optional>
#include <string>
#include <vector>

#include "b2ndfs/util/status.h"
#include "b2ndfs/vfs/filesystem.h"

namespace b2ndfs::vfs {

enum class MirroredType { kDir, kFile, kContainer };

// Regular files and directories with a container extension are containers
// (a directory is a sparse frame; one without chunks.b2frame shows as a
// broken container saying so); devices, fifos and sockets are not shown.
std::optional<MirroredType> MirroredKind(const std::string& name, const struct stat& st);

struct MirroredEntry {
  std::string name;
  MirroredType type;
};

// The shown entries of a source directory, sorted by name (stat() follows
// symbolic links; dangling ones are left out).
Result<std::vector<MirroredEntry>> ListDirectory(const std::string& path);

class VectorListing : public DirListing {
 public:
  explicit VectorListing(std::vector<DirEntry> entries) : entries_(std::move(entries)) {}
  size_t size() const override { return entries_.size(); }
  DirEntry at(size_t index) const override { return entries_[index]; }

 private:
  std::vector<DirEntry> entries_;
};

}  // namespace b2ndfs::vfs
