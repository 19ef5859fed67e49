// views/header_writers: the text and bytes of the headers that let imaging
// tools open a container's `data` file (NRRD, MetaImage, ENVI) or read the
// array behind a header of their own (NIfTI-1).
//
// Pure functions of the NumPy descr and the C-order shape: no I/O, no state,
// any thread. Each format lists axes fastest first, so the shape is written
// reversed; the byte order comes from the descr ('<' little, '>' big, '|' or
// '=' this machine's). A 0-D array is described as one item (shape {1}).
// Errors: when a format cannot describe the array (a dtype it has no type
// for, too many axes, an axis too long or empty) the writer returns a Status
// with ENOTSUP whose message says why in words; meta.json shows it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "b2ndfs/util/status.h"

namespace b2ndfs::views {

// A plain numeric NumPy item type: kind 'i', 'u', 'f' or 'c', size in bytes.
struct NumericType {
  char kind = 0;
  int size = 0;
  bool big_endian = false;
};

// A descr without its Python quotes ("'<f4'" -> "<f4"), for messages.
std::string UnquotedDescr(const std::string& descr);

// Parses a NumPy descr as Container::npy_descr() gives it ("'<f4'", quoted)
// or bare ("<f4"). ENOTSUP for structured, string, void, bool, datetime or
// object types, and for sizes NumPy has no such type of.
Result<NumericType> ParseNumericDescr(const std::string& descr);

// NRRD0004 detached header: type, dimension (at most 16), sizes, endian (for
// items over one byte), encoding raw, data file `data_file`. No complex type.
Result<std::string> MakeNrrdHeader(const std::string& descr, const std::vector<int64_t>& shape,
                                   const std::string& data_file);

// MetaImage (.mhd): NDims (at most 10, axes up to 2^31-1), DimSize,
// ElementType MET_*, byte order, ElementDataFile `data_file` (last, as
// MetaIO requires). No complex type.
Result<std::string> MakeMetaImageHeader(const std::string& descr, const std::vector<int64_t>& shape,
                                        const std::string& data_file);

// ENVI (.hdr) for a band-sequential file: samples, lines, bands from the last
// three axes (at most 3-D), data type code, byte order. No signed 8-bit type.
Result<std::string> MakeEnviHeader(const std::string& descr, const std::vector<int64_t>& shape);

// NIfTI-1 single-file (.nii) header: 348 bytes and 4 zero extension bytes,
// so vox_offset is 352 and the C-order array follows. At most 7-D, axes up
// to 32767 (dim[] is int16). Written in the byte order of the data, as the
// format requires (readers detect it from sizeof_hdr).
constexpr size_t kNiftiHeaderSize = 352;
Result<std::string> MakeNifti1Header(const std::string& descr, const std::vector<int64_t>& shape);

}  // namespace b2ndfs::views
