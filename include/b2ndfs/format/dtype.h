// format/dtype: NumPy dtype strings as Blosc2 writers store them (plain type
// strings and NumPy names, `<U`/`|S` strings, structured dtypes as Python's
// str(dtype): the list form and the {'names': ...} dict form, nested,
// sub-arrays, titles, offsets): their item size, the .npy `descr` that makes
// numpy.load give the same dtype, and whether a dtype agrees with the item
// size the chunks hold. Parsed from untrusted text with bounded depth.
// Thread-safety: pure functions; never throw.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace b2ndfs::format {

constexpr size_t kMaxDtypeLength = 64 * 1024;

// True when every byte is printable ASCII (what a dtype string may hold).
bool IsPrintableAscii(std::string_view text);

// Item size implied by a NumPy dtype string ("<f4" -> 4, "|S10" -> 10,
// "<U3" -> 12, "?" -> 1, "<M8[ns]" -> 8, "float32" -> 4,
// "[('a', '<i4'), ('b', '<f8', (2,))]" -> 20, nested structures and
// (title, name) field names included), or nullopt when it cannot be worked out
// (the frame's typesize then rules). Never throws.
std::optional<int64_t> DtypeItemSize(const std::string& dtype);

// The `descr` to write into a .npy header for this dtype: the dtype string
// quoted as a Python literal for simple dtypes (NumPy names such as "float32"
// become their little-endian type string), the list literal itself for
// structured ones; "'|V<itemsize>'" when there is no usable dtype: none,
// unparsable, object ("O"), or one whose item size differs from `itemsize`.
std::string NpyDescr(const std::optional<std::string>& dtype, int64_t itemsize);

// The dtype next to the item size the chunks really hold. The chunks rule:
// data, chunks/ and slices/ are served as `itemsize`-byte items whatever the
// dtype says. `note` is set (words for meta.json) when the dtype is none the
// files can use as is: unparsable, or of another item size (c-blosc2's own
// default "|u1" on 4-byte items, say); npy_descr then is "|V<itemsize>", so
// that every view keyed on it (headers, zarr/, images) is absent.
struct DtypeCheck {
  std::string npy_descr;            // NpyDescr(dtype, itemsize)
  std::optional<std::string> note;  // nullopt: dtype and item size agree
};
DtypeCheck CheckDtype(const std::optional<std::string>& dtype, int64_t itemsize);

}  // namespace b2ndfs::format
