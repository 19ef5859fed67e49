// codec/builtin: what the linked c-blosc2 decodes with code of its own, and
// the check that keeps every other chunk away from it.
//
// c-blosc2 (2.17 and 3.3, blosc/blosc2.c) decodes a codec or filter it only
// knows by id (grok, openhtj2k, openzl, j2k, htj2k: registered with no decoder)
// by loading a plugin: fill_codec()/fill_filter() -> load_lib() dlopen()s
// "libblosc2_<name>.so" from the library path, then popen()s
// `python -c "import blosc2_<name>; ..."` through the shell (PATH decides which
// python) and dlopen()s the path it prints, again for every block while it
// fails. blosc_d() reaches it when a chunk's flags bits 5..7 ("compformat") are
// 6 and the user-defined codec byte (22) names such a codec; pipeline_backward()
// when one of the six filter bytes (16..21) names such a filter. So whoever
// writes a file into SOURCE would choose what the daemon runs. b2ndfs never
// lets that happen: every chunk is checked against an allowlist of what is
// built in before c-blosc2 sees it (InspectChunkHeader, InspectChunk and every
// Decompressor method call CheckChunkPipeline), and such data reads as EIO.
//
// Built in (the same ids in c-blosc2 2.17 and 3.3, see builtin.cc):
//   codecs: blosclz, lz4, lz4hc, zlib, zstd; ndlz (32), zfp_acc (33),
//           zfp_prec (34), zfp_rate (35);
//   filters: none, shuffle, bitshuffle, delta, trunc_prec; ndcell (32),
//           ndmean (33), bytedelta_buggy (34), bytedelta (35), int_trunc (36).
// Errors: CheckChunkPipeline returns Status(EIO) naming what is missing; an
// id that neither c-blosc2 nor a plugin ever writes (filters 5-31 and
// 37-159, codecs 6-31 and 41-159, a built-in codec in the user-defined slot,
// reserved codec formats) is said to be damage ("the chunk is damaged: it
// names filter id 90, ..."), not a missing plugin.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "b2ndfs/util/status.h"

namespace b2ndfs::codec {

// The frame-level description: `compcode` is the frame's codec in c-blosc2's
// compcode numbering (BLOSC_ZLIB = 4, ...; 6 means "the id is in `udcodec`"),
// `filters` the frame's filter ids. nullopt when all of it is built in, else
// words such as "codec grok (id 37) needs the external plugin blosc2_grok,
// which b2ndfs never loads" (several findings joined by "; ").
std::optional<std::string> UnsupportedPipeline(int compcode, uint8_t udcodec,
                                               std::span<const uint8_t> filters);

// Checks the codec and filters a chunk header names, read exactly as c-blosc2
// reads them (16-byte Blosc1 headers have no codec or filter bytes; the alpha
// format ignores the sixth filter), whatever else the header says (memcpyed,
// special values, dictionary): EIO unless everything is built in. Needs the
// chunk's first 16 bytes, or 32 when flags announce the extended header.
Status CheckChunkPipeline(std::span<const uint8_t> header);

// The version of the c-blosc2 library actually linked (for --version).
std::string LibraryVersion();

}  // namespace b2ndfs::codec
