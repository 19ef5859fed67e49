// Private to stores: what a store's index is made of (StoreIndex: its
// nodes, where each leaf's bytes lie, the zip directory and embed frame it
// was read from), shared by the parts that build it (store_index.h), charge
// it (index_budget.h), read CTables from it (ctable.h) and serve it
// (store_tree.cc). Plain values, immutable once built.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "b2ndfs/source/byte_source.h"
#include "b2ndfs/source/declared_file.h"
#include "b2ndfs/stores/embed_frame.h"
#include "b2ndfs/stores/zip_directory.h"

namespace b2ndfs::stores::internal {

// An index that would hold more than this is a verdict instead
// (index_budget.h, OversizeVerdict; store_tree.h, "Memory").
constexpr int64_t kMaxIndexBytes = int64_t{64} << 20;

enum class StoreKind { kZip, kDir, kEmbed };

// Where a leaf's bytes are.
struct Leaf {
  enum class Where { kMember, kFile, kEmbed } where = Where::kMember;
  size_t member = 0;   // kMember: index in the zip directory
  std::string file;    // kFile: path below the .b2d directory
  int64_t offset = 0;  // kEmbed: range of the embed stream
  int64_t length = 0;  // kMember, kEmbed: bytes
};

// One valid/NAME.npy file: what its size and reads need (declared to the
// mount: source/declared_file.h).
using ValidFileSpec = source::RowSelection;

struct Node {
  bool directory = true;
  std::optional<Leaf> leaf;  // a leaf container
  // A CTable's valid/NAME.npy (a plain file made from two leaves).
  std::shared_ptr<const ValidFileSpec> valid_file;
  std::string problem;                // non-empty: a directory holding only meta.json saying why
  std::string meta_json;              // a directory's meta.json (empty: none)
  std::string columns_json;           // a CTable root's columns.json (empty: none)
  std::vector<std::string> children;  // a directory's names, sorted (meta.json not included)
};

struct StoreIndex {
  StoreKind kind = StoreKind::kZip;
  // The version read: of the store file (.b2z, .b2e) or of its embed.b2e (.b2d).
  source::Signature signature;
  std::map<std::string, Node> nodes;  // by path below the store ("" is the store itself)
  ZipDirectory zip;
  std::shared_ptr<const EmbedFrame> embed;  // null: none (or broken)
  int64_t embed_offset = 0;                 // where the embed frame lies in its file
  int64_t embed_size = 0;
  int64_t memory_bytes = 0;
};

}  // namespace b2ndfs::stores::internal
