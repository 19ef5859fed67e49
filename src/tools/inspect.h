// b2ndfs-inspect's pieces (private to the tool): a SOURCE opened as the
// daemon opens it (src/app/main.cc: a local tree wrapped by
// stores::MakeStoreTree, so stores, their leaves and CTables appear as in a
// mount), and a small driver over vfs::Filesystem: walk a path, read a file,
// list a directory. Nothing here interprets a container: every answer is the
// filesystem's, so the tool says what the mount would say.
// Thread-safety: single-threaded, as the tool is.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/store/container.h"
#include "b2ndfs/util/status.h"
#include "b2ndfs/vfs/filesystem.h"

namespace b2ndfs::inspect {

// One SOURCE (a directory, a container, or a store file), opened as
// b2ndfs opens it.
struct Inspected {
  explicit Inspected(const std::string& source);
  cache::BlockCache cache;
  codec::DecompressorPool decompressors;
  store::StoreContext store;
  std::unique_ptr<vfs::Filesystem> fs;
};

// Walks a slash-separated path from the root; the error names the part
// that is missing, with the filesystem's reason.
Result<vfs::Ino> Walk(vfs::Filesystem& fs, const std::string& path);

// Reads [offset, offset + length) of a file (to its end when length < 0),
// handing each piece to `out`.
using Sink = std::function<Status(const uint8_t*, size_t)>;
Status ReadFile(vfs::Filesystem& fs, vfs::Ino ino, int64_t offset, int64_t length, const Sink& out);
// The whole file as text.
Result<std::string> ReadText(vfs::Filesystem& fs, vfs::Ino ino);
// The meta.json in directory `dir` (a path from the root).
Result<std::string> MetaJson(vfs::Filesystem& fs, const std::string& dir = "");

// A directory's entries.
Result<std::vector<vfs::DirEntry>> List(vfs::Filesystem& fs, vfs::Ino ino);

// Small readers of the JSON b2ndfs writes (meta.json, columns.json): the
// first `"key": VALUE` at any depth, as text ("" when absent). Enough for the
// documents the tool prints about; not a JSON parser.
std::string StringField(const std::string& json, const std::string& key);
std::string ScalarField(const std::string& json, const std::string& key);
// The reason of a meta.json that is {"error": "REASON"}; empty for one that
// describes something.
std::string ErrorOf(const std::string& meta_json);

// The core's read errors start with the file's path; said once by the tool.
std::string Unprefixed(const std::string& message, const std::string& path);

// check: every container, store, leaf and table at or below the root of
// `source`, one line each; exit status 1 when any is broken.
int Check(const std::string& source, bool quick);

}  // namespace b2ndfs::inspect
