#include "header_writers.h"

#include <bit>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <span>
#include <utility>

namespace b2ndfs::views {
namespace {

Status Unsupported(std::string why) { return Status(ENOTSUP, std::move(why)); }

// Why `format` cannot describe an array of `shape`, if it cannot: too many
// axes, an empty axis (every format needs lengths >= 1) or one too long.
Status CheckShape(const char* format, const std::vector<int64_t>& shape, size_t max_dims,
                  int64_t max_length) {
  if (shape.size() > max_dims) {
    return Unsupported(std::string(format) + " describes at most " + std::to_string(max_dims) +
                       " dimensions");
  }
  for (int64_t n : shape) {
    if (n == 0) return Unsupported(std::string(format) + " cannot describe an empty axis");
    if (n > max_length) {
      return Unsupported(std::string(format) + " axes are at most " + std::to_string(max_length) +
                         " long");
    }
  }
  return Status::Ok();
}

// "; data.nhdr and data.nii describe them": the headers that do exist for
// numeric items of `shape` that some other format refused, so that a reason
// never sends its reader to a file that is absent as well (NRRD and NIfTI-1
// have a type for every item NRRD, MetaImage and ENVI know).
std::string OthersDescribe(const std::vector<int64_t>& shape, bool nrrd) {
  std::vector<std::string> names;
  if (nrrd && CheckShape("NRRD", shape, 4, INT64_MAX).ok()) names.emplace_back("data.nhdr");
  if (CheckShape("NIfTI-1", shape, 7, 32767).ok()) names.emplace_back("data.nii");
  if (names.empty()) return "";
  if (names.size() == 1) return "; " + names[0] + " describes it";
  return "; " + names[0] + " and " + names[1] + " describe them";
}

// The axes fastest first; a 0-D array is one item.
std::vector<int64_t> FastestFirst(const std::vector<int64_t>& shape) {
  if (shape.empty()) return {1};
  return std::vector<int64_t>(shape.rbegin(), shape.rend());
}

std::string Joined(const std::vector<int64_t>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ' ';
    out += std::to_string(values[i]);
  }
  return out;
}

// The format's name for a numeric type, from a table keyed by kind and size;
// nullptr when it has none.
struct TypeName {
  char kind;
  int size;
  const char* name;
};
template <size_t N>
const char* Lookup(const TypeName (&table)[N], const NumericType& t) {
  for (const TypeName& e : table) {
    if (e.kind == t.kind && e.size == t.size) return e.name;
  }
  return nullptr;
}

Result<NumericType> TypeFor(const char* format, const std::string& descr) {
  Result<NumericType> type = ParseNumericDescr(descr);
  if (!type.ok()) return Unsupported(std::string(format) + ": " + type.status().message());
  return type;
}

Status NoType(const char* format, const std::string& descr) {
  return Unsupported(std::string(format) + " has no type for items " + UnquotedDescr(descr));
}

constexpr int64_t kInt32Max = 2147483647;

// Shortest text that reads back as the same double.
std::string Num(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

template <typename T>
std::vector<T> Reversed(const std::vector<T>& v) {
  return std::vector<T>(v.rbegin(), v.rend());
}

std::string Numbers(const std::vector<double>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) out += (i > 0 ? " " : "") + Num(values[i]);
  return out;
}

// "\"a\" \"b\"", plus `extra` empty strings.
std::string Quoted(const std::vector<std::string>& words, size_t extra) {
  std::string out;
  for (size_t i = 0; i < words.size() + extra; ++i) {
    out += std::string(i > 0 ? " " : "") + "\"" + (i < words.size() ? words[i] : "") + "\"";
  }
  return out;
}

// NIfTI's xyzt_units: the spatial unit of the first three axes (when they
// agree and NIfTI names it) plus the time unit of the 4th.
int NiftiUnits(const std::vector<std::string>& units) {
  auto code = [](const std::string& u, bool time) {
    static const std::pair<const char*, int> kSpace[] = {
        {"m", 1},          {"meter", 1},      {"metre", 1},  {"mm", 2},
        {"millimeter", 2}, {"millimetre", 2}, {"um", 3},     {"micron", 3},
        {"micrometer", 3}, {"micrometre", 3}, {"\u00b5m", 3}};
    static const std::pair<const char*, int> kTime[] = {
        {"s", 8}, {"sec", 8}, {"second", 8}, {"ms", 16}, {"msec", 16}, {"us", 24}, {"usec", 24}};
    using Table = std::span<const std::pair<const char*, int>>;
    for (const auto& [name, c] : time ? Table(kTime) : Table(kSpace)) {
      if (u == name) return c;
    }
    return 0;
  };
  int out = 0;
  const size_t spatial = std::min<size_t>(units.size(), 3);
  if (spatial > 0) {
    const int c = code(units[0], false);
    bool same = true;
    for (size_t i = 1; i < spatial; ++i) same = same && units[i] == units[0];
    if (same) out |= c;
  }
  if (units.size() > 3) out |= code(units[3], true);
  return out;
}

bool Is64BitInteger(const NumericType& t) {
  return (t.kind == 'i' || t.kind == 'u') && t.size == 8;
}

}  // namespace

std::string UnquotedDescr(const std::string& descr) {
  if (descr.size() >= 2 && descr.front() == '\'' && descr.back() == '\'') {
    return descr.substr(1, descr.size() - 2);
  }
  return descr;
}

Result<NumericType> ParseNumericDescr(const std::string& quoted) {
  const std::string descr = UnquotedDescr(quoted);
  if (descr.empty()) return Unsupported("no item type");
  if (descr.front() == '[' || descr.front() == '(')
    return Unsupported("structured items are not numeric");
  size_t pos = 0;
  NumericType t;
  t.big_endian = std::endian::native == std::endian::big;
  if (descr[0] == '<' || descr[0] == '>' || descr[0] == '|' || descr[0] == '=') {
    if (descr[0] == '<') t.big_endian = false;
    if (descr[0] == '>') t.big_endian = true;
    pos = 1;
  }
  if (pos >= descr.size()) return Unsupported("no item type in " + descr);
  t.kind = descr[pos++];
  switch (t.kind) {
    case 'i':
    case 'u':
    case 'f':
    case 'c':
      break;
    case 'b':
      return Unsupported("boolean items " + descr + " are not numeric");
    case 'S':
    case 'U':
    case 'V':
    case 'a':
      return Unsupported("string or opaque items " + descr + " are not numeric");
    default:
      return Unsupported("items " + descr + " are not numeric");
  }
  if (pos >= descr.size() || descr.size() - pos > 2) return Unsupported("bad item type " + descr);
  int size = 0;
  for (; pos < descr.size(); ++pos) {
    if (descr[pos] < '0' || descr[pos] > '9') return Unsupported("bad item type " + descr);
    size = size * 10 + (descr[pos] - '0');
  }
  t.size = size;
  const bool valid = (t.kind == 'i' || t.kind == 'u')
                         ? (size == 1 || size == 2 || size == 4 || size == 8)
                     : t.kind == 'f' ? (size == 2 || size == 4 || size == 8 || size == 16)
                                     : (size == 8 || size == 16 || size == 32);
  if (!valid) return Unsupported("bad item type " + descr);
  return t;
}

Result<std::string> MakeNrrdHeader(const std::string& descr, const std::vector<int64_t>& shape,
                                   const std::string& data_file,
                                   const format::VoxelGeometry& geometry) {
  static constexpr TypeName kTypes[] = {{'i', 1, "int8"},   {'u', 1, "uint8"},  {'i', 2, "int16"},
                                        {'u', 2, "uint16"}, {'i', 4, "int32"},  {'u', 4, "uint32"},
                                        {'i', 8, "int64"},  {'u', 8, "uint64"}, {'f', 4, "float"},
                                        {'f', 8, "double"}};
  B2NDFS_ASSIGN_OR_RETURN(NumericType t, TypeFor("NRRD", descr));
  const char* type = Lookup(kTypes, t);
  if (type == nullptr) return NoType("NRRD", descr);
  if (shape.size() > 4) {
    return Unsupported(
        "NRRD is offered for at most 4 dimensions: VTK 9.1's vtkNrrdReader (ParaView's on Debian "
        "12) crashes on more" +
        OthersDescribe(shape, false));
  }
  B2NDFS_RETURN_IF_ERROR(CheckShape("NRRD", shape, 4, INT64_MAX));
  std::vector<int64_t> sizes = FastestFirst(shape);
  const size_t ndim = sizes.size();
  // vtkNrrdReader's guess: a fastest axis of at most 9 items is a vector's
  // components; the image axes left must be two or three.
  const size_t components = sizes[0] <= 9 ? 1 : 0;
  while (sizes.size() < 2 + components) sizes.push_back(1);
  const size_t added = sizes.size() - ndim;
  std::string out =
      "NRRD0004\n# b2ndfs: detached header of the C-order array in " + data_file + "\n";
  if (added > 0) {
    out += "# b2ndfs: " + std::to_string(added) + " trailing ax" + (added > 1 ? "es" : "is") +
           " of length 1 added, for VTK's reader\n";
  }
  out += std::string("type: ") + type + "\ndimension: " + std::to_string(sizes.size()) +
         "\nsizes: " + Joined(sizes) + "\n";
  // A space only where the vlmeta gives one; its fields follow "sizes",
  // since vtkNrrdReader sizes its axis list by the last dimension it read.
  if (!geometry.spacing.empty() || !geometry.origin.empty() || !geometry.units.empty()) {
    // Added axes are axes of the space too (unit directions, origin 0): ITK
    // refuses a space whose dimension differs from the number of axes.
    const size_t dim = sizes.size();
    std::vector<double> spacing =
        geometry.spacing.empty() ? std::vector<double>(ndim, 1.0) : Reversed(geometry.spacing);
    std::vector<double> origin =
        geometry.origin.empty() ? std::vector<double>(ndim, 0.0) : Reversed(geometry.origin);
    spacing.resize(dim, 1.0);
    origin.resize(dim, 0.0);
    out += "space dimension: " + std::to_string(dim) + "\nspace directions:";
    for (size_t i = 0; i < dim; ++i) {
      out += " (";
      for (size_t j = 0; j < dim; ++j) out += (j > 0 ? "," : "") + Num(i == j ? spacing[i] : 0.0);
      out += ")";
    }
    out += "\n";
    if (!geometry.origin.empty()) {
      out += "space origin: (";
      for (size_t i = 0; i < dim; ++i) out += (i > 0 ? "," : "") + Num(origin[i]);
      out += ")\n";
    }
    if (!geometry.units.empty()) {
      out += "space units: " + Quoted(Reversed(geometry.units), added) + "\n";
    }
  }
  if (!geometry.axis_names.empty()) {
    out += "labels: " + Quoted(Reversed(geometry.axis_names), added) + "\n";
  }
  // NRRD forbids "endian" where byte order means nothing.
  if (t.size > 1) out += std::string("endian: ") + (t.big_endian ? "big" : "little") + "\n";
  out += "encoding: raw\ndata file: " + data_file + "\n";
  return out;
}

Result<std::string> MakeMetaImageHeader(const std::string& descr, const std::vector<int64_t>& shape,
                                        const std::string& data_file,
                                        const format::VoxelGeometry& geometry) {
  static constexpr TypeName kTypes[] = {
      {'i', 1, "MET_CHAR"}, {'u', 1, "MET_UCHAR"}, {'i', 2, "MET_SHORT"}, {'u', 2, "MET_USHORT"},
      {'i', 4, "MET_INT"},  {'u', 4, "MET_UINT"},  {'f', 4, "MET_FLOAT"}, {'f', 8, "MET_DOUBLE"}};
  B2NDFS_ASSIGN_OR_RETURN(NumericType t, TypeFor("MetaImage", descr));
  if (Is64BitInteger(t)) {
    return Unsupported(
        "MetaImage is not offered for 64-bit integers: VTK 9.1's vtkMetaImageReader (ParaView's "
        "on Debian 12) crashes on MET_LONG_LONG" +
        OthersDescribe(shape, true));
  }
  const char* type = Lookup(kTypes, t);
  if (type == nullptr) return NoType("MetaImage", descr);
  if (shape.size() > 3) {
    return Unsupported(
        "MetaImage is offered for at most 3 dimensions: VTK 9.1's vtkMetaImageReader (ParaView's "
        "on Debian 12) crashes on more" +
        OthersDescribe(shape, true));
  }
  B2NDFS_RETURN_IF_ERROR(CheckShape("MetaImage", shape, 3, kInt32Max));
  const std::vector<int64_t> sizes = FastestFirst(shape);
  const char* msb = t.big_endian ? "True" : "False";
  // MetaIO reads either byte-order key; ElementDataFile must come last, as
  // everything after it is taken to be data.
  std::string out = "ObjectType = Image\nNDims = " + std::to_string(sizes.size()) +
                    "\nBinaryData = True\nBinaryDataByteOrderMSB = " + msb +
                    "\nElementByteOrderMSB = " + msb + "\nCompressedData = False\n";
  if (!geometry.origin.empty()) out += "Offset = " + Numbers(Reversed(geometry.origin)) + "\n";
  if (!geometry.spacing.empty()) {
    out += "ElementSpacing = " + Numbers(Reversed(geometry.spacing)) + "\n";
  }
  return out + "DimSize = " + Joined(sizes) + "\nElementType = " + type +
         "\nElementDataFile = " + data_file + "\n";
}

Result<std::string> MakeEnviHeader(const std::string& descr, const std::vector<int64_t>& shape,
                                   const format::VoxelGeometry& geometry) {
  static constexpr TypeName kTypes[] = {{'u', 1, "1"},  {'i', 2, "2"},  {'i', 4, "3"},
                                        {'f', 4, "4"},  {'f', 8, "5"},  {'c', 8, "6"},
                                        {'c', 16, "9"}, {'u', 2, "12"}, {'u', 4, "13"}};
  B2NDFS_ASSIGN_OR_RETURN(NumericType t, TypeFor("ENVI", descr));
  if (Is64BitInteger(t)) {
    return Unsupported(
        "ENVI is not offered for 64-bit integers: GDAL 3.6 (Debian 12's) does not know ENVI data "
        "types 14 and 15" +
        OthersDescribe(shape, true));
  }
  const char* type = Lookup(kTypes, t);
  if (type == nullptr) return NoType("ENVI", descr);
  B2NDFS_RETURN_IF_ERROR(CheckShape("ENVI", shape, 3, kInt32Max));
  // Band-sequential: samples (fastest), lines, bands (slowest) are exactly
  // the C order of (bands, lines, samples).
  std::vector<int64_t> sizes = FastestFirst(shape);
  sizes.resize(3, 1);
  std::string out = "ENVI\ndescription = {b2ndfs: the C-order array in data}\nsamples = " +
                    std::to_string(sizes[0]) + "\nlines = " + std::to_string(sizes[1]) +
                    "\nbands = " + std::to_string(sizes[2]) +
                    "\nheader offset = 0\nfile type = ENVI Standard\ndata type = " + type +
                    "\ninterleave = bsq\nbyte order = " + (t.big_endian ? "1" : "0") + "\n";
  if (!shape.empty() && (!geometry.spacing.empty() || !geometry.origin.empty())) {
    // x along samples (the last axis), y along lines (the one before).
    auto last = [&shape](const std::vector<double>& v, size_t back, double fallback) {
      return v.empty() || back > shape.size() ? fallback : v[shape.size() - back];
    };
    const double sx = last(geometry.spacing, 1, 1), sy = last(geometry.spacing, 2, 1);
    const double ox = last(geometry.origin, 1, 0), oy = last(geometry.origin, 2, 0);
    // ENVI's reference pixel (1.5, 1.5) is item [0, 0]'s centre; y grows
    // with the line number, which ENVI (north up) writes as a negative size.
    out += "map info = {Arbitrary, 1.5, 1.5, " + Num(ox) + ", " + Num(oy) + ", " + Num(sx) + ", " +
           Num(-sy) + ", 0}\n";
  }
  return out;
}

Result<std::string> MakeNifti1Header(const std::string& descr, const std::vector<int64_t>& shape,
                                     const format::VoxelGeometry& geometry) {
  struct Code {
    char kind;
    int size;
    int16_t code;
  };
  static constexpr Code kCodes[] = {{'u', 1, 2},   {'i', 2, 4},    {'i', 4, 8},    {'f', 4, 16},
                                    {'c', 8, 32},  {'f', 8, 64},   {'i', 1, 256},  {'u', 2, 512},
                                    {'u', 4, 768}, {'i', 8, 1024}, {'u', 8, 1280}, {'c', 16, 1792}};
  B2NDFS_ASSIGN_OR_RETURN(NumericType t, TypeFor("NIfTI-1", descr));
  int16_t datatype = 0;
  for (const Code& c : kCodes) {
    if (c.kind == t.kind && c.size == t.size) datatype = c.code;
  }
  if (datatype == 0) return NoType("NIfTI-1", descr);
  B2NDFS_RETURN_IF_ERROR(CheckShape("NIfTI-1", shape, 7, 32767));
  const std::vector<int64_t> dims = FastestFirst(shape);

  std::string h(kNiftiHeaderSize, '\0');
  auto put = [&h, big = t.big_endian](size_t offset, uint32_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) {
      const int shift = 8 * (big ? bytes - 1 - i : i);
      h[offset + i] = static_cast<char>((value >> shift) & 0xff);
    }
  };
  auto put16 = [&put](size_t offset, int value) {
    put(offset, static_cast<uint16_t>(static_cast<int16_t>(value)), 2);
  };
  auto put_float = [&put](size_t offset, float value) {
    put(offset, std::bit_cast<uint32_t>(value), 4);
  };
  put(0, 348, 4);  // sizeof_hdr: how readers tell the byte order
  h[38] = 'r';     // regular
  put16(40, static_cast<int>(dims.size()));
  for (size_t i = 1; i <= 7; ++i) {
    put16(40 + 2 * i, i <= dims.size() ? static_cast<int>(dims[i - 1]) : 1);
  }
  put16(70, datatype);
  put16(72, t.size * 8);                                       // bitpix
  for (size_t i = 0; i < 8; ++i) put_float(76 + 4 * i, 1.0f);  // pixdim, qfac 1
  const std::vector<double> spacing = Reversed(geometry.spacing);
  for (size_t i = 0; i < spacing.size() && i < 7; ++i) {
    put_float(76 + 4 * (i + 1), static_cast<float>(spacing[i]));
  }
  put_float(108, static_cast<float>(kNiftiHeaderSize));              // vox_offset
  h[123] = static_cast<char>(NiftiUnits(Reversed(geometry.units)));  // xyzt_units
  // scl_slope 0: no scaling. qform_code 0 and sform_code 0 (no orientation)
  // unless the vlmeta gives a geometry: then qform_code 1 (scanner
  // coordinates), quatern_b/c/d 0 (no rotation), the origin in qoffset.
  if (!geometry.spacing.empty() || !geometry.origin.empty()) {
    put16(252, 1);
    const std::vector<double> origin = Reversed(geometry.origin);
    for (size_t i = 0; i < origin.size() && i < 3; ++i) {
      put_float(268 + 4 * i, static_cast<float>(origin[i]));
    }
    if (origin.size() > 3) put_float(136, static_cast<float>(origin[3]));  // toffset
  }
  std::memcpy(&h[148], "b2ndfs", 6);  // descrip
  std::memcpy(&h[344], "n+1", 4);     // magic, NUL included
  // Bytes 348..351: the extension flag, all zero (no extensions).
  return h;
}

}  // namespace b2ndfs::views
