#include "header_writers.h"

#include <bit>
#include <cerrno>
#include <cstring>

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
                                   const std::string& data_file) {
  static constexpr TypeName kTypes[] = {{'i', 1, "int8"},   {'u', 1, "uint8"},  {'i', 2, "int16"},
                                        {'u', 2, "uint16"}, {'i', 4, "int32"},  {'u', 4, "uint32"},
                                        {'i', 8, "int64"},  {'u', 8, "uint64"}, {'f', 4, "float"},
                                        {'f', 8, "double"}};
  B2NDFS_ASSIGN_OR_RETURN(NumericType t, TypeFor("NRRD", descr));
  const char* type = Lookup(kTypes, t);
  if (type == nullptr) return NoType("NRRD", descr);
  // teem's NRRD_DIM_MAX.
  B2NDFS_RETURN_IF_ERROR(CheckShape("NRRD", shape, 16, INT64_MAX));
  const std::vector<int64_t> sizes = FastestFirst(shape);
  std::string out = "NRRD0004\n# b2ndfs: detached header of the C-order array in " + data_file +
                    "\ntype: " + type + "\ndimension: " + std::to_string(sizes.size()) +
                    "\nsizes: " + Joined(sizes) + "\n";
  // NRRD forbids "endian" where byte order means nothing.
  if (t.size > 1) out += std::string("endian: ") + (t.big_endian ? "big" : "little") + "\n";
  out += "encoding: raw\ndata file: " + data_file + "\n";
  return out;
}

Result<std::string> MakeMetaImageHeader(const std::string& descr, const std::vector<int64_t>& shape,
                                        const std::string& data_file) {
  static constexpr TypeName kTypes[] = {{'i', 1, "MET_CHAR"},      {'u', 1, "MET_UCHAR"},
                                        {'i', 2, "MET_SHORT"},     {'u', 2, "MET_USHORT"},
                                        {'i', 4, "MET_INT"},       {'u', 4, "MET_UINT"},
                                        {'i', 8, "MET_LONG_LONG"}, {'u', 8, "MET_ULONG_LONG"},
                                        {'f', 4, "MET_FLOAT"},     {'f', 8, "MET_DOUBLE"}};
  B2NDFS_ASSIGN_OR_RETURN(NumericType t, TypeFor("MetaImage", descr));
  const char* type = Lookup(kTypes, t);
  if (type == nullptr) return NoType("MetaImage", descr);
  // MetaIO keeps the axes in `int m_DimSize[10]`.
  B2NDFS_RETURN_IF_ERROR(CheckShape("MetaImage", shape, 10, kInt32Max));
  const std::vector<int64_t> sizes = FastestFirst(shape);
  const char* msb = t.big_endian ? "True" : "False";
  // MetaIO reads either byte-order key; ElementDataFile must come last, as
  // everything after it is taken to be data.
  return "ObjectType = Image\nNDims = " + std::to_string(sizes.size()) +
         "\nBinaryData = True\nBinaryDataByteOrderMSB = " + msb + "\nElementByteOrderMSB = " + msb +
         "\nCompressedData = False\nDimSize = " + Joined(sizes) + "\nElementType = " + type +
         "\nElementDataFile = " + data_file + "\n";
}

Result<std::string> MakeEnviHeader(const std::string& descr, const std::vector<int64_t>& shape) {
  static constexpr TypeName kTypes[] = {
      {'u', 1, "1"},  {'i', 2, "2"},  {'i', 4, "3"},  {'f', 4, "4"},  {'f', 8, "5"}, {'c', 8, "6"},
      {'c', 16, "9"}, {'u', 2, "12"}, {'u', 4, "13"}, {'i', 8, "14"}, {'u', 8, "15"}};
  B2NDFS_ASSIGN_OR_RETURN(NumericType t, TypeFor("ENVI", descr));
  const char* type = Lookup(kTypes, t);
  if (type == nullptr) return NoType("ENVI", descr);
  B2NDFS_RETURN_IF_ERROR(CheckShape("ENVI", shape, 3, kInt32Max));
  // Band-sequential: samples (fastest), lines, bands (slowest) are exactly
  // the C order of (bands, lines, samples).
  std::vector<int64_t> sizes = FastestFirst(shape);
  sizes.resize(3, 1);
  return "ENVI\ndescription = {b2ndfs: the C-order array in data}\nsamples = " +
         std::to_string(sizes[0]) + "\nlines = " + std::to_string(sizes[1]) +
         "\nbands = " + std::to_string(sizes[2]) +
         "\nheader offset = 0\nfile type = ENVI Standard\ndata type = " + type +
         "\ninterleave = bsq\nbyte order = " + (t.big_endian ? "1" : "0") + "\n";
}

Result<std::string> MakeNifti1Header(const std::string& descr, const std::vector<int64_t>& shape) {
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
  put_float(108, static_cast<float>(kNiftiHeaderSize));        // vox_offset
  // scl_slope 0: no scaling. qform_code and sform_code 0: no orientation.
  std::memcpy(&h[148], "b2ndfs", 6);  // descrip
  std::memcpy(&h[344], "n+1", 4);     // magic, NUL included
  // Bytes 348..351: the extension flag, all zero (no extensions).
  return h;
}

}  // namespace b2ndfs::views
