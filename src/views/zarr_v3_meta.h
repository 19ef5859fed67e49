// zarr_v3_meta: the pure parts of the Zarr v3 view (data.zarr/): the v3 data
// type of a NumPy descr, the zarr.json document, the shard layout of a
// sharding_indexed chunk whose inner chunks are all present and uncompressed
// (inner chunks, then the index of (offset, nbytes) pairs and its CRC-32C),
// and the preorder numbering of the chunk key tree c/I/J/K.
// Zarr v3 (zarr-specs: core, sharding-indexed codec, crc32c codec) writes a
// regular grid's chunk keys as "c/I/J/K" ("c" for a 0-D array): one
// directory per axis but the last.
// Ownership: plain values in and out. Thread-safety: pure functions; a
// ShardIndex is immutable.
// Errors: none; callers check sizes first (MakeShardIndex, MakeKeyTree say
// nullopt when a count does not fit).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace b2ndfs::views {

struct ZarrV3Dtype {
  std::string data_type;  // "float32", "bool", "r96", "fixed_length_utf32" ...
  // Fixed-length strings (zarr-python 3.1's extension types, configured by
  // their length): > 0 writes data_type as {"name": data_type,
  // "configuration": {"length_bytes": length_bytes}}.
  int64_t length_bytes = 0;
  std::string endian;      // the bytes codec's: "little", "big", "" (1-byte and raw items)
  std::string fill_value;  // JSON: 0, 0.0, false, [0.0, 0.0], [0, 0, 0] ...
  // Zarr v3 has no data type for the descr: its items are shown as raw bytes
  // (r<bits>), and this says what they are.
  std::string raw_reason;
  // Which readers know an extension type (meta.json's note), else empty.
  std::string readers;
};

// `npy_descr` is Container::npy_descr() (a Python literal: "'<f4'",
// "[('a', '<i4')]"), `itemsize` the layout's. Booleans, integers, floats and
// complex numbers of either byte order map to their v3 names; NumPy's
// fixed-length strings to what zarr-python 3.1 writes for them (zarr-extensions
// data types): 'U' to fixed_length_utf32 (code units in the bytes codec's
// byte order), 'S' to null_terminated_bytes, fill value "" for both;
// everything else (datetimes, structured, void, a descr whose size is not the
// item size) to the raw type r<8 * itemsize>, whose bytes are the items'.
ZarrV3Dtype ZarrV3DtypeOf(const std::string& npy_descr, int64_t itemsize);

// zarr.json up to the value of "attributes" (which comes last): the caller
// appends the attributes object and ZarrJsonTail(). `inner` empty: unsharded
// (codecs [bytes]; 0-D arrays are never sharded); else a sharding_indexed
// codec with that inner chunk shape.
// `dimension_names`: the JSON array text, or empty to leave the member out.
std::string ZarrJsonHead(const ZarrV3Dtype& dtype, const std::vector<int64_t>& shape,
                         const std::vector<int64_t>& chunks, const std::vector<int64_t>& inner,
                         const std::string& dimension_names);
inline const char* ZarrJsonTail() { return "\n}\n"; }

// The text of `value` (a JSON array of exactly `ndim` strings or nulls, as
// meta.json writes xarray's "_ARRAY_DIMENSIONS" vlmetalayer) when it can be
// "dimension_names"; empty otherwise.
std::string DimensionNamesOf(const std::string& value, int ndim);

// CRC-32C (Castagnoli, reflected, as the crc32c codec and iSCSI use),
// continued from `crc` (0 to start).
uint32_t Crc32c(std::span<const uint8_t> bytes, uint32_t crc = 0);

// A shard file: `count` inner chunks of `inner_bytes` each, in C order of the
// inner chunk grid, then the index: per inner chunk its offset and size as
// two little-endian uint64, then the CRC-32C of those index bytes (4 bytes,
// little-endian). Every inner chunk is present.
class ShardIndex {
 public:
  int64_t count() const { return count_; }
  int64_t inner_bytes() const { return inner_bytes_; }
  int64_t data_bytes() const { return count_ * inner_bytes_; }
  int64_t index_bytes() const { return 16 * count_ + 4; }  // CRC included
  int64_t size() const { return data_bytes() + index_bytes(); }
  // Bytes [offset, offset + out.size()) of the index (offset 0 is the first
  // byte after the inner chunks); the range must lie inside it. Computes the
  // CRC only when the range reaches it.
  void Read(int64_t offset, std::span<uint8_t> out) const;
  uint32_t Crc() const;

 private:
  friend std::optional<ShardIndex> MakeShardIndex(int64_t count, int64_t inner_bytes);
  ShardIndex(int64_t count, int64_t inner_bytes) : count_(count), inner_bytes_(inner_bytes) {}
  void Entries(int64_t offset, std::span<uint8_t> out) const;
  int64_t count_;
  int64_t inner_bytes_;
};
// nullopt when count < 1, inner_bytes < 1, or the shard's size overflows.
std::optional<ShardIndex> MakeShardIndex(int64_t count, int64_t inner_bytes);

// The key tree of a chunk grid of ndim >= 1 axes: "c" (depth 0), directories
// c/I0 ... c/I0/.../I(n-2), and chunk files at depth n. Nodes are numbered in
// preorder from c's ordinal (0): a directory's descendants take the ordinals
// right after its own, so each listing is in ascending order and a name's
// ordinal says which directory of a listing holds it.
class KeyTree {
 public:
  int ndim() const { return static_cast<int>(grid_.size()); }
  const std::vector<int64_t>& grid() const { return grid_; }
  // Ordinals c and everything below it use.
  uint64_t size() const { return subtree_[0]; }
  // Nodes in the subtree of a node at `depth` (itself included).
  uint64_t Subtree(int depth) const { return subtree_[static_cast<size_t>(depth)]; }
  // The ordinal (from c's) of the node at coords[0..depth), depth <= ndim.
  uint64_t Ordinal(std::span<const int64_t> coords) const;

 private:
  friend std::optional<KeyTree> MakeKeyTree(const std::vector<int64_t>& grid);
  std::vector<int64_t> grid_;
  std::vector<uint64_t> subtree_;  // by depth, 0..ndim
};
// nullopt when the grid has no axes, an empty axis, or too many nodes to number.
std::optional<KeyTree> MakeKeyTree(const std::vector<int64_t>& grid);

}  // namespace b2ndfs::views
