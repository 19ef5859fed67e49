// zarr_meta: the pure parts of the Zarr v2 view (zarr/): which NumPy descrs
// Zarr v2 can describe and with what fill value, the .zarray document, chunk
// keys, and finding the "vlmeta" object in meta.json for .zattrs.
// .zattrs adds xarray's "_ARRAY_DIMENSIONS" to the vlmetalayers, so that
// xarray opens the store.
// Ownership: plain values in and out. Thread-safety: pure functions.
// Errors: ZarrDtypeOf returns EINVAL with a message for meta.json's "absent".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "b2ndfs/util/status.h"

namespace b2ndfs::views {

struct ZarrDtype {
  std::string dtype;  // the typestr, e.g. "<f4", "|b1", ">S10"
};

// `npy_descr` is Container::npy_descr() (a Python literal, e.g. "'<f4'").
// Numbers, bool, complex, datetimes and fixed strings are accepted; structured
// and void dtypes are not (EINVAL, saying why).
Result<ZarrDtype> ZarrDtypeOf(const std::string& npy_descr);

// The .zarray JSON (with a trailing newline): uncompressed, unfiltered, C order.
std::string MakeZarrArray(const ZarrDtype& dtype, const std::vector<int64_t>& shape,
                          const std::vector<int64_t>& chunks);

// A JSON array of integers: "[4, 3]".
std::string JsonInts(const std::vector<int64_t>& values);

// A chunk's key: grid coordinates joined with '.'; "0" for a 0-D array.
std::string ZarrChunkKey(const std::vector<int64_t>& coords);

// The byte range [first, second) of the value of top-level member `key` of the
// JSON object `json` (the first of that name); nullopt when absent or when
// `json` is not one valid JSON object (util/json.h reads it).
std::optional<std::pair<size_t, size_t>> FindJsonMember(const std::string& json,
                                                        const std::string& key);

// .zattrs is `prefix` followed by the vlmeta object's text from byte `skip`
// on: the object with "_ARRAY_DIMENSIONS": ["dim_0", ...] (xarray's names
// for unnamed axes; `dim_prefix` + "dim_0", ... in a directory's group, so
// that the axes of different variables stay distinct) inserted first, unless
// a vlmetalayer of that name is there already (then the vlmeta text
// unchanged: the container names its axes).
struct ZattrsPlan {
  std::string prefix;
  size_t skip = 0;
};
ZattrsPlan PlanZattrs(const std::string& vlmeta, int ndim, const std::string& dim_prefix = "");

}  // namespace b2ndfs::views
