// stores: python-blosc2's stores shown as directories of their leaves
// (README.md, "Stores"), for any source tree (local, http, s3, az).
//
// MakeStoreTree() wraps a source::Tree: entries named NAME.b2z (a regular
// file: a ZIP_STORED archive), NAME.b2e (a regular file: an EmbedStore
// frame) and NAME.b2d (a directory with embed.b2e) list and stat as
// directories, recognised by name alone. Below one, the key /a/b is the path
// a/b; each leaf is a container (IsContainer) whose bytes are a range of the
// store's (a zip member read in place) or of the embed frame's decompressed
// stream; a group is a directory; the store (and a group with attributes)
// has a meta.json; a CTable has columns.json and valid/NAME.npy files (its
// columns' values at the live rows), which the tree only declares
// (source/declared_file.h: its two leaves and the rows it selects) and the
// mount computes from the leaves it opens as containers. What cannot be
// read (the store, or one member) is a directory holding only a meta.json
// {"error": ...}.
// Versions: a leaf's signature is its store file's (for a .b2d, its
// embed.b2e's, or the leaf file's own), so replacing the store ends its
// leaves' generations, and an open leaf keeps reading the store version it
// opened (its ByteSource holds the store's).
// Memory: a store's parsed index lives in the mount's block cache (the
// context's; a tree made without one has its own of 64 MiB), keyed by the
// store's path and version: parsed once however many stats, lookups and
// opens ask at the same time (the cache's single flight), charged what it
// holds in cache_size, evicted like a block. An index that would hold more
// than 64 MiB is kept as a verdict (a meta.json {"error": ...}), so
// such a store is not parsed again while its version stays. The embed
// frames' decompressed units live there too (embed_frame.h).
// Errors: as source::Tree's; content errors are meta.json's, never errors.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <memory>
#include <string>

#include "b2ndfs/source/tree.h"

namespace b2ndfs::store {
struct StoreContext;
}  // namespace b2ndfs::store

namespace b2ndfs::stores {

// True for names of stores: NAME.b2z, NAME.b2e, NAME.b2d.
bool HasStoreExtension(const std::string& name);

// `context`: the mount's block cache, which store indexes and embed units
// are kept in (null: the tree's own). It must outlive the tree.
std::shared_ptr<source::Tree> MakeStoreTree(std::shared_ptr<source::Tree> base,
                                            store::StoreContext* context = nullptr);

}  // namespace b2ndfs::stores
