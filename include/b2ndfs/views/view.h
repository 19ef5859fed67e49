// views: the virtual files and directories inside a container directory,
// and the registry that puts them there.
//
// A Node is one name in a container's tree (a file such as data.npy, or a
// directory such as slices/0). Nodes are small immutable values made at
// lookup for one container generation; they never hold the container (the
// open-container LRU must be free to close it): every call takes it.
// Every kind of entry in a container directory is a RootEntry registered in
// a Registry; adding a kind of virtual file is adding one RootEntry (its own
// file in src/views), not editing switches elsewhere.
// Ordinals: every listable name of a generation has a distinct ordinal in
// [0, Registry::OrdinalCount()), so the vfs can give it the same inode number
// in readdir and lookup without remembering anything per name, and find the
// name again from the number alone (Registry::NodeAt); names that are looked
// up but never listed (hyperslabs) have kNoOrdinal. NodeAt relies on two
// properties every kind keeps: a listing of more than kOrdinalScanMax names
// is in ascending ordinal order, and a directory's descendants have
// ordinals above its own; in such a long listing, a directory's descendants
// also come before the next entry's ordinal (preorder, as data.zarr/c/).
// Errors: Status: ENOENT for names that do not exist, ENOTDIR, EIO for reads.
// Thread-safety: nodes and the registry are immutable; any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "b2ndfs/store/container.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::views {

constexpr uint64_t kNoOrdinal = UINT64_MAX;
// Listings up to this long are scanned by NodeAt; longer ones are searched.
constexpr size_t kOrdinalScanMax = 64;

struct ListEntry {
  std::string name;
  bool directory = false;
  uint64_t ordinal = kNoOrdinal;
};

// A directory's entries, possibly generated (millions of slice names).
class Listing {
 public:
  virtual ~Listing() = default;
  virtual size_t size() const = 0;
  virtual ListEntry at(size_t index) const = 0;
};

class Node {
 public:
  virtual ~Node() = default;
  const std::string& name() const { return name_; }
  uint64_t ordinal() const { return ordinal_; }
  virtual bool IsDirectory() const = 0;

  // Directories.
  virtual Result<std::shared_ptr<const Node>> Lookup(const store::Container& container,
                                                     const std::string& name) const;
  virtual Result<std::shared_ptr<const Listing>> List(const store::Container& container) const;

  // Files. Size() is exact; Read() returns fewer bytes only at the end.
  virtual int64_t Size(const store::Container& container) const;
  virtual Result<size_t> Read(const store::Container& container, int64_t offset, size_t length,
                              uint8_t* out) const;
  // Best-effort decompression ahead of a sequential reader.
  virtual void ReadAhead(const store::Container& container, int64_t offset, int64_t length) const;
  // Reading the whole file now would decompress nothing (its blocks are all
  // in the block cache). Files are pushed to the kernel ahead of a reader
  // only then: a push that decodes competes with the reader's own work.
  virtual bool Cached(const store::Container& container) const;
  // The file that a reader going through this file's directory in name order
  // opens next (image-sequence tools do), where reading ahead into it costs
  // what reading ahead within one file does; nullptr where it would not.
  virtual std::shared_ptr<const Node> Next(const store::Container& container) const;

 protected:
  Node(std::string name, uint64_t ordinal) : name_(std::move(name)), ordinal_(ordinal) {}

 private:
  std::string name_;
  uint64_t ordinal_;
};

// A file that streams the array: a header, then a box in C order.
class StreamFile : public Node {
 public:
  StreamFile(std::string name, uint64_t ordinal, store::ArrayStream stream)
      : Node(std::move(name), ordinal), stream_(std::move(stream)) {}
  bool IsDirectory() const override { return false; }
  int64_t Size(const store::Container& container) const override;
  Result<size_t> Read(const store::Container& container, int64_t offset, size_t length,
                      uint8_t* out) const override;
  void ReadAhead(const store::Container& container, int64_t offset, int64_t length) const override;
  bool Cached(const store::Container& container) const override;

 private:
  store::ArrayStream stream_;
};

// One kind of entry of a container directory (meta.json, data, chunks/ ...).
class RootEntry {
 public:
  virtual ~RootEntry() = default;
  // The names this kind adds to the directory of `container` (none when it
  // does not apply, e.g. to a container that cannot be decoded).
  virtual std::vector<ListEntry> Names(const store::Container& container,
                                       uint64_t ordinal_base) const = 0;
  // How many ordinals the names of this kind and everything below use.
  virtual uint64_t OrdinalCount(const store::Container& container) const = 0;
  // nullptr when `name` is not this kind's.
  virtual Result<std::shared_ptr<const Node>> Lookup(const store::Container& container,
                                                     const std::string& name,
                                                     uint64_t ordinal_base) const = 0;
  // meta.json's "files" entries of this kind.
  virtual void Describe(const store::Container& container,
                        std::vector<store::FileDescription>* out) const = 0;
  // Names this kind answers in the container directory without listing them
  // (.zgroup).
  virtual std::vector<std::string> UnlistedNames() const { return {}; }
  // The same for one container, where the names depend on it (the Zarr
  // variable named after the container).
  virtual std::vector<std::string> UnlistedNamesOf(const store::Container&) const {
    return UnlistedNames();
  }
  // Whether this kind appears in a container of what python-blosc2 made it
  // as (format/vlen.h): the array views only in arrays, items/ only in
  // object arrays; a kind that does not serve a container adds nothing to
  // it, not even ordinals.
  virtual bool Serves(store::ContentKind kind) const { return kind == store::ContentKind::kArray; }
};

class Registry : public store::FileCatalog {
 public:
  // meta.json, data, data.npy, chunks/, slices/, data.nhdr, data.mhd,
  // data.hdr, data.nii, view/, zarr/, data.tiff, images/, the unlisted
  // .zgroup and .zmetadata that make the directory a Zarr group,
  // data.zarr/, preview.png and preview/; items/ (object arrays) and
  // batches/ (batch arrays).
  static std::shared_ptr<const Registry> Default();
  // The kinds Default() has, by name ("meta", "npy", "zarr" ...) with the
  // files each adds ("meta.json", "data.npy", "zarr/" ...), in order.
  static std::vector<std::pair<std::string, std::string>> Kinds();
  // Default() with only the kinds named (views=LIST); EINVAL naming the
  // first unknown one.
  static Result<std::shared_ptr<const Registry>> WithKinds(const std::vector<std::string>& kinds);
  void Add(std::unique_ptr<RootEntry> entry);

  // The container directory itself.
  std::shared_ptr<const Node> Root() const { return root_; }
  uint64_t OrdinalCount(const store::Container& container) const;
  // The node whose ordinal this is (ENOENT when none is).
  Result<std::shared_ptr<const Node>> NodeAt(const store::Container& container,
                                             uint64_t ordinal) const;
  // Every name of the container directory, listed or not.
  std::vector<std::string> RootNames(const store::Container& container) const;
  std::vector<store::FileDescription> Describe(const store::Container& container) const;
  // meta.json: what the store knows of the container with the files this
  // registry shows (store/file_catalog.h).
  std::string RenderMetaJson(const store::Container& container,
                             format::MetaJsonInput input) const override;

  Registry();

 private:
  friend class RootDir;
  std::vector<std::unique_ptr<RootEntry>> entries_;
  std::shared_ptr<const Node> root_;
};

}  // namespace b2ndfs::views
