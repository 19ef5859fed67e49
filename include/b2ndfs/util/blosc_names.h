// util/blosc_names: the one table of c-blosc2 codec and filter names, by
// the ids a frame header or chunk header stores.
//
// Names are c-blosc2 3.3's own (blosc2.h, blosc2/codecs-registry.h,
// blosc2/filters-registry.h; snappy from Blosc1's blosc.h): built-in codecs
// 0..5, the globally registered plugins 32..40 and filters 32..36. Ids in
// c-blosc2's user range (BLOSC2_USER_REGISTERED_*_START = 160 .. 255) are
// "user-registered:<id>"; any other id is "id:<id>" (unassigned).
// Pure functions, thread-safe, never fail. Shared by format (meta.json) and
// codec (its messages), which must agree.
#pragma once

#include <cstdint>
#include <string>

namespace b2ndfs {

// A codec by its id (compcode, or the udcodec byte): "blosclz", "lz4",
// "lz4hc", "snappy", "zlib", "zstd", "ndlz", "zfp_acc", "zfp_prec",
// "zfp_rate", "openhtj2k", "grok", "openzl", "j2k", "htj2k".
std::string CodecIdName(int id);

// A codec as FrameInfo numbers it: `codec` 6 (BLOSC_UDCODEC_FORMAT) means
// the id is in `udcodec`.
std::string CodecName(int codec, uint8_t udcodec);

// "none", "shuffle", "bitshuffle", "delta", "trunc_prec", "ndcell",
// "ndmean", "bytedelta_buggy", "bytedelta", "int_trunc".
std::string FilterIdName(uint8_t id);
inline std::string FilterName(uint8_t id) { return FilterIdName(id); }

// True for ids c-blosc2 leaves to users' own registration (160..255).
constexpr bool IsUserRegisteredId(int id) { return id >= 160 && id <= 255; }

}  // namespace b2ndfs
