// views/header_writers: the text and bytes of the headers that let imaging
// tools open a container's `data` file (NRRD, MetaImage, ENVI) or read the
// array behind a header of their own (NIfTI-1).
//
// Pure functions of the NumPy descr, the C-order shape and the voxel geometry
// (format/voxel_geometry.h, in NumPy's axis order): no I/O, no state, any
// thread. Each format lists axes fastest first, so the shape, spacing,
// origin, units and names are written reversed; the byte order comes from
// the descr ('<' little, '>' big, '|' or '=' this machine's). A 0-D array is
// described as one item (shape {1}).
// Where a header that is valid would crash a reader people use, it is
// absent or written in a variant that reader takes (VTK 9.1, Debian 12's and
// so ParaView's there; README.md, "Headers, axes and voxel geometry").
// Errors: when a format cannot describe the array (a dtype it has no type
// for, too many axes, an axis too long or empty) the writer returns a Status
// with ENOTSUP whose message says why in words; meta.json shows it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "b2ndfs/format/voxel_geometry.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::views {

// A plain numeric NumPy item type.
struct NumericType {
  char kind = 0;            // 'i', 'u', 'f' or 'c'
  int size = 0;             // bytes per item
  bool big_endian = false;  // most significant byte first
};

// A descr without its Python quotes ("'<f4'" -> "<f4"), for messages.
std::string UnquotedDescr(const std::string& descr);

// Parses a NumPy descr as Container::npy_descr() gives it ("'<f4'", quoted)
// or bare ("<f4"). ENOTSUP for structured, string, void, bool, datetime or
// object types, and for sizes NumPy has no such type of.
Result<NumericType> ParseNumericDescr(const std::string& descr);

// NRRD0004 detached header: type, dimension, sizes, endian (for items over
// one byte), encoding raw, data file `data_file`. No complex type. At most 4
// axes: vtkNrrdReader takes a fastest axis of 9 or fewer items (and any 4th
// axis) as vector components and crashes when fewer than two image axes
// remain, or more than three; so trailing axes of length 1 are added until
// two remain (a comment line says so), and 5-D and more have no header.
// Geometry: a space of the array's dimension (`space dimension`, `space
// directions` (diagonal: the spacing; default 1), `space origin`, `space
// units`), as the NRRD spec asks instead of `spacings` when an origin is
// given; `labels` from the axis names. Added axes are axes of the space
// (ITK wants as many as the array has), with unit directions and origin 0.
Result<std::string> MakeNrrdHeader(const std::string& descr, const std::vector<int64_t>& shape,
                                   const std::string& data_file,
                                   const format::VoxelGeometry& geometry = {});

// MetaImage (.mhd): NDims, DimSize, ElementType MET_*, byte order, Offset
// and ElementSpacing from the geometry (no units or names in MetaIO),
// ElementDataFile `data_file` (last, as MetaIO requires). No complex type.
// At most 3 axes and no 64-bit integers: vtkMetaImageReader crashes on both
// (data.nhdr and data.nii describe them for ITK).
Result<std::string> MakeMetaImageHeader(const std::string& descr, const std::vector<int64_t>& shape,
                                        const std::string& data_file,
                                        const format::VoxelGeometry& geometry = {});

// ENVI (.hdr) for a band-sequential file: samples, lines, bands from the last
// three axes (at most 3-D), data type code, byte order; `map info`
// (Arbitrary) from the spacing and origin of the last two axes, so that
// GDAL's geotransform puts item [.., 0, 0]'s centre at the origin. No signed
// 8-bit type, and no 64-bit integers (ENVI's types 14 and 15 are unknown to
// GDAL 3.6, Debian 12's).
Result<std::string> MakeEnviHeader(const std::string& descr, const std::vector<int64_t>& shape,
                                   const format::VoxelGeometry& geometry = {});

// NIfTI-1 single-file (.nii) header: 348 bytes and 4 zero extension bytes,
// so vox_offset is 352 and the C-order array follows. At most 7-D, axes up
// to 32767 (dim[] is int16). Written in the byte order of the data, as the
// format requires (readers detect it from sizeof_hdr). Geometry: pixdim
// from the spacing, qform_code 1 (scanner coordinates, no rotation) with
// the origin's first three axes in qoffset_x/y/z (and the 4th's in toffset)
// when a spacing or an origin is given, xyzt_units when the units of the
// first three axes (and of the 4th) are ones NIfTI names (m, mm, um; s, ms,
// us).
constexpr size_t kNiftiHeaderSize = 352;
Result<std::string> MakeNifti1Header(const std::string& descr, const std::vector<int64_t>& shape,
                                     const format::VoxelGeometry& geometry = {});

}  // namespace b2ndfs::views
