#include "b2ndfs/format/npy_header.h"

#include <algorithm>

namespace b2ndfs::format {

std::string NpyHeader(const std::string& descr, const std::vector<int64_t>& shape) {
  std::string dict = "{'descr': " + descr + ", 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) dict += ",";
    if (i + 1 < shape.size()) dict += " ";
  }
  dict += "), }";
  // Version 1.0 has a 2-byte header length; longer headers need 2.0.
  const bool v2 = dict.size() + 1 + 10 > 65535;
  const size_t total = (v2 ? 12 : 10) + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  // Not for an empty array: numpy.memmap maps from the page where the data
  // begins, and a file that ends exactly there cannot be mapped.
  const bool empty = std::find(shape.begin(), shape.end(), 0) != shape.end();
  if (!empty && padded <= kNpyHeaderPage) padded = kNpyHeaderPage;
  dict.append(padded - total, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  const uint32_t len = static_cast<uint32_t>(dict.size());
  for (int b = 0; b < (v2 ? 4 : 2); ++b) out += static_cast<char>((len >> (8 * b)) & 0xff);
  return out + dict;
}

}  // namespace b2ndfs::format
