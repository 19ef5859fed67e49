// The NRRD, MetaImage, ENVI and NIfTI-1 header writers: exact text for
// known arrays, NIfTI fields decoded back in both byte orders, and the
// arrays each format cannot describe (with the reason meta.json shows).
#include "header_writers.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace b2ndfs::views {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Decodes a NIfTI header field in the byte order sizeof_hdr reveals.
struct NiftiReader {
  const std::string& h;
  bool big;
  explicit NiftiReader(const std::string& header)
      : h(header), big(static_cast<uint8_t>(header[0]) == 0) {}
  uint32_t U(size_t offset, int bytes) const {
    uint32_t v = 0;
    for (int i = 0; i < bytes; ++i) {
      const uint32_t b = static_cast<uint8_t>(h[offset + i]);
      v |= b << (8 * (big ? bytes - 1 - i : i));
    }
    return v;
  }
  int I16(size_t offset) const { return static_cast<int16_t>(U(offset, 2)); }
  int32_t I32(size_t offset) const { return static_cast<int32_t>(U(offset, 4)); }
  float F(size_t offset) const {
    const uint32_t bits = U(offset, 4);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
};

TEST_CASE("ParseNumericDescr accepts plain numeric types, quoted or bare") {
  auto t = ParseNumericDescr("'<f4'");
  REQUIRE(t.ok());
  CHECK(t->kind == 'f');
  CHECK(t->size == 4);
  CHECK_FALSE(t->big_endian);
  t = ParseNumericDescr(">c16");
  REQUIRE(t.ok());
  CHECK(t->kind == 'c');
  CHECK(t->size == 16);
  CHECK(t->big_endian);
  t = ParseNumericDescr("'|u1'");
  REQUIRE(t.ok());
  CHECK(t->kind == 'u');
  CHECK(t->size == 1);
  for (const char* bad :
       {"'|b1'", "'|S16'", "'|V3'", "\"[('a', '<i4'), ('b', '<f8')]\"", "[('a', '<i4')]",
        "'<M8[ns]'", "'<i3'", "'<f5'", "'<c4'", "''", "'<'", "'<u123'", "'<U4'"}) {
    INFO(bad);
    auto r = ParseNumericDescr(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().error_number() == ENOTSUP);
    CHECK_FALSE(r.status().message().empty());
  }
}

TEST_CASE("NRRD header lists sizes fastest first") {
  auto h = MakeNrrdHeader("'<f4'", {2, 3, 4}, "data");
  REQUIRE(h.ok());
  CHECK(*h ==
        "NRRD0004\n"
        "# b2ndfs: detached header of the C-order array in data\n"
        "type: float\n"
        "dimension: 3\n"
        "sizes: 4 3 2\n"
        "endian: little\n"
        "encoding: raw\n"
        "data file: data\n");
  h = MakeNrrdHeader("'>i2'", {17}, "data");
  REQUIRE(h.ok());
  CHECK(Contains(*h, "type: int16\n"));
  // vtkNrrdReader crashes on one image axis: a trailing axis is added.
  CHECK(Contains(*h, "# b2ndfs: 1 trailing axis of length 1 added, for VTK's reader\n"));
  CHECK(Contains(*h, "dimension: 2\nsizes: 17 1\n"));
  CHECK(Contains(*h, "endian: big\n"));
  h = MakeNrrdHeader("'|u1'", {5, 6}, "data");
  REQUIRE(h.ok());
  CHECK(Contains(*h, "type: uint8\n"));
  CHECK_FALSE(Contains(*h, "endian"));      // NRRD forbids it for 1-byte items
  h = MakeNrrdHeader("'<f8'", {}, "data");  // 0-D: one item
  REQUIRE(h.ok());
  CHECK(Contains(*h, "dimension: 3\nsizes: 1 1 1\n"));
  // A fastest axis of 9 or fewer items is VTK's vector components.
  h = MakeNrrdHeader("'<i8'", {7, 9}, "data");
  REQUIRE(h.ok());
  CHECK(Contains(*h, "dimension: 3\nsizes: 9 7 1\n"));
  h = MakeNrrdHeader("'<i8'", {7, 10}, "data");
  REQUIRE(h.ok());
  CHECK(Contains(*h, "dimension: 2\nsizes: 10 7\n"));
  CHECK_FALSE(Contains(*h, "trailing"));
}

TEST_CASE("NRRD cannot describe complex items, 17 axes or an empty axis") {
  auto h = MakeNrrdHeader("'<c8'", {2, 2}, "data");
  REQUIRE_FALSE(h.ok());
  CHECK(h.status().message() == "NRRD has no type for items <c8");
  // vtkNrrdReader crashes on 5 axes and more.
  h = MakeNrrdHeader("'<u2'", std::vector<int64_t>(5, 2), "data");
  REQUIRE_FALSE(h.ok());
  CHECK(Contains(h.status().message(), "at most 4 dimensions"));
  CHECK(Contains(h.status().message(), "VTK 9.1"));
  CHECK(MakeNrrdHeader("'<u2'", std::vector<int64_t>(4, 2), "data").ok());
  h = MakeNrrdHeader("'<u2'", {3, 0}, "data");
  REQUIRE_FALSE(h.ok());
  CHECK(h.status().message() == "NRRD cannot describe an empty axis");
  h = MakeNrrdHeader("'|b1'", {3}, "data");
  REQUIRE_FALSE(h.ok());
  CHECK(Contains(h.status().message(), "not numeric"));
}

TEST_CASE("a refusal names only the headers that do exist instead") {
  auto nifti = [](const std::vector<int64_t>& shape) {
    return MakeNifti1Header("'<i8'", shape, {}).ok();
  };
  auto nrrd = [](const std::vector<int64_t>& shape) {
    return MakeNrrdHeader("'<i8'", shape, "data").ok();
  };
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{
           {3, 4}, {2, 2, 2, 2, 2}, {40000, 2}, std::vector<int64_t>(8, 2)}) {
    INFO(shape.size() << " axes, first " << shape[0]);
    for (const auto& h :
         {MakeMetaImageHeader("'<i8'", shape, "data"), MakeEnviHeader("'<i8'", shape, {})}) {
      REQUIRE_FALSE(h.ok());
      const std::string& why = h.status().message();
      CHECK(Contains(why, "data.nhdr") == nrrd(shape));
      CHECK(Contains(why, "data.nii") == nifti(shape));
    }
    auto h = MakeNrrdHeader("'<i8'", std::vector<int64_t>(shape.size() + 4, 2), "data");
    REQUIRE_FALSE(h.ok());
    CHECK(Contains(h.status().message(), "data.nii") ==
          nifti(std::vector<int64_t>(shape.size() + 4, 2)));
  }
}

TEST_CASE("MetaImage header ends with ElementDataFile") {
  auto h = MakeMetaImageHeader("'>u2'", {6, 7, 8}, "data");
  REQUIRE(h.ok());
  CHECK(*h ==
        "ObjectType = Image\n"
        "NDims = 3\n"
        "BinaryData = True\n"
        "BinaryDataByteOrderMSB = True\n"
        "ElementByteOrderMSB = True\n"
        "CompressedData = False\n"
        "DimSize = 8 7 6\n"
        "ElementType = MET_USHORT\n"
        "ElementDataFile = data\n");
  h = MakeMetaImageHeader("'<i4'", {3}, "data");
  REQUIRE(h.ok());
  CHECK(Contains(*h, "ElementType = MET_INT\n"));
  CHECK(Contains(*h, "ElementByteOrderMSB = False\n"));
  // vtkMetaImageReader crashes on 64-bit integers and on 4 axes.
  for (const char* descr : {"'<i8'", "'>u8'"}) {
    h = MakeMetaImageHeader(descr, {3, 4}, "data");
    REQUIRE_FALSE(h.ok());
    CHECK(Contains(h.status().message(), "not offered for 64-bit integers"));
  }
  h = MakeMetaImageHeader("'<u2'", {5, 6, 7, 8}, "data");
  REQUIRE_FALSE(h.ok());
  CHECK(Contains(h.status().message(), "at most 3 dimensions"));
  CHECK_FALSE(MakeMetaImageHeader("'<c16'", {3}, "data").ok());
  CHECK_FALSE(MakeMetaImageHeader("'<f2'", {3}, "data").ok());
  h = MakeMetaImageHeader("'<f4'", {int64_t{1} << 31}, "data");
  REQUIRE_FALSE(h.ok());
  CHECK(h.status().message() == "MetaImage axes are at most 2147483647 long");
}

TEST_CASE("ENVI header: samples, lines, bands from the last three axes") {
  auto h = MakeEnviHeader("'<f4'", {4, 3, 2});
  REQUIRE(h.ok());
  CHECK(*h ==
        "ENVI\n"
        "description = {b2ndfs: the C-order array in data}\n"
        "samples = 2\n"
        "lines = 3\n"
        "bands = 4\n"
        "header offset = 0\n"
        "file type = ENVI Standard\n"
        "data type = 4\n"
        "interleave = bsq\n"
        "byte order = 0\n");
  h = MakeEnviHeader("'>c8'", {9, 10});
  REQUIRE(h.ok());
  CHECK(Contains(*h, "samples = 10\nlines = 9\nbands = 1\n"));
  CHECK(Contains(*h, "data type = 6\n"));
  CHECK(Contains(*h, "byte order = 1\n"));
  const std::pair<const char*, const char*> codes[] = {
      {"'|u1'", "1"},  {"'<i2'", "2"},  {"'<i4'", "3"}, {"'<f8'", "5"},
      {"'<c16'", "9"}, {"'<u2'", "12"}, {"'<u4'", "13"}};
  for (const auto& [descr, code] : codes) {
    INFO(descr);
    h = MakeEnviHeader(descr, {3});
    REQUIRE(h.ok());
    CHECK(Contains(*h, std::string("data type = ") + code + "\n"));
  }
  h = MakeEnviHeader("'<f4'", {2, 2, 2, 2});
  REQUIRE_FALSE(h.ok());
  CHECK(h.status().message() == "ENVI describes at most 3 dimensions");
  // GDAL 3.6 knows no ENVI type 14 or 15.
  for (const char* descr : {"'<i8'", "'<u8'"}) {
    h = MakeEnviHeader(descr, {3});
    REQUIRE_FALSE(h.ok());
    CHECK(Contains(h.status().message(), "GDAL 3.6"));
  }
  h = MakeEnviHeader("'|i1'", {2});
  REQUIRE_FALSE(h.ok());
  CHECK(h.status().message() == "ENVI has no type for items |i1");
}

TEST_CASE("NIfTI-1 header fields decode back, in the data's byte order") {
  for (const bool big : {false, true}) {
    INFO("big-endian " << big);
    auto h = MakeNifti1Header(big ? "'>i2'" : "'<i2'", {5, 6, 7});
    REQUIRE(h.ok());
    REQUIRE(h->size() == kNiftiHeaderSize);
    const NiftiReader r(*h);
    CHECK(r.big == big);
    CHECK(r.I32(0) == 348);
    CHECK(r.I16(40) == 3);
    CHECK(r.I16(42) == 7);  // fastest axis first
    CHECK(r.I16(44) == 6);
    CHECK(r.I16(46) == 5);
    for (size_t i = 4; i <= 7; ++i) CHECK(r.I16(40 + 2 * i) == 1);
    CHECK(r.I16(70) == 4);   // DT_INT16
    CHECK(r.I16(72) == 16);  // bitpix
    for (size_t i = 0; i < 8; ++i) CHECK(r.F(76 + 4 * i) == 1.0f);
    CHECK(r.F(108) == 352.0f);
    CHECK(r.F(112) == 0.0f);  // scl_slope: unscaled
    CHECK(r.I16(252) == 0);   // qform_code
    CHECK(r.I16(254) == 0);   // sform_code
    CHECK(std::memcmp(h->data() + 344, "n+1\0", 4) == 0);
    CHECK(std::string(h->data() + 348, 4) == std::string(4, '\0'));
  }
  const std::pair<const char*, int> codes[] = {{"'|u1'", 2},    {"'<i4'", 8},    {"'<f4'", 16},
                                               {"'<c8'", 32},   {"'<f8'", 64},   {"'|i1'", 256},
                                               {"'<u2'", 512},  {"'<u4'", 768},  {"'<i8'", 1024},
                                               {"'<u8'", 1280}, {"'<c16'", 1792}};
  for (const auto& [descr, code] : codes) {
    INFO(descr);
    auto h = MakeNifti1Header(descr, {3});
    REQUIRE(h.ok());
    const NiftiReader r(*h);
    CHECK(r.I16(70) == code);
    CHECK(r.I16(72) == 8 * ParseNumericDescr(descr)->size);
  }
  auto h = MakeNifti1Header("'<f4'", {});  // 0-D: one voxel
  REQUIRE(h.ok());
  CHECK(NiftiReader(*h).I16(40) == 1);
  CHECK(NiftiReader(*h).I16(42) == 1);
}

TEST_CASE("NIfTI-1 cannot describe 8 axes, long axes, half floats or structs") {
  auto h = MakeNifti1Header("'<f4'", std::vector<int64_t>(8, 2));
  REQUIRE_FALSE(h.ok());
  CHECK(h.status().message() == "NIfTI-1 describes at most 7 dimensions");
  CHECK(MakeNifti1Header("'<f4'", std::vector<int64_t>(7, 2)).ok());
  CHECK(MakeNifti1Header("'<f4'", {32767}).ok());
  h = MakeNifti1Header("'<f4'", {32768});
  REQUIRE_FALSE(h.ok());
  CHECK(h.status().message() == "NIfTI-1 axes are at most 32767 long");
  CHECK_FALSE(MakeNifti1Header("'<f2'", {3}).ok());
  h = MakeNifti1Header("[('a', '<i4'), ('b', '<f8')]", {3});
  REQUIRE_FALSE(h.ok());
  CHECK(h.status().message() == "NIfTI-1: structured items are not numeric");
}

}  // namespace
}  // namespace b2ndfs::views

namespace b2ndfs::views {
namespace {

// spacing (0.5, 2, 3), origin (10, 20, 30), units mm, names (z, y, x) in
// NumPy's axis order: every header lists them reversed.
format::VoxelGeometry Geometry3() {
  format::VoxelGeometry g;
  g.spacing = {3, 2, 0.5};
  g.origin = {30, 20, 10};
  g.units = {"mm", "mm", "mm"};
  g.axis_names = {"z", "y", "x"};
  return g;
}

TEST_CASE("NRRD header: the geometry as a space, fastest axis first") {
  auto h = MakeNrrdHeader("'<f4'", {5, 6, 17}, "data", Geometry3());
  REQUIRE(h.ok());
  CHECK(*h ==
        "NRRD0004\n"
        "# b2ndfs: detached header of the C-order array in data\n"
        "type: float\n"
        "dimension: 3\n"
        "sizes: 17 6 5\n"
        "space dimension: 3\n"
        "space directions: (0.5,0,0) (0,2,0) (0,0,3)\n"
        "space origin: (10,20,30)\n"
        "space units: \"mm\" \"mm\" \"mm\"\n"
        "labels: \"x\" \"y\" \"z\"\n"
        "endian: little\n"
        "encoding: raw\n"
        "data file: data\n");
  // An axis added for VTK is an axis of the space (ITK wants them all).
  format::VoxelGeometry g;
  g.spacing = {0.25, 1.5};
  g.units = {"um", "um"};
  g.axis_names = {"row", "col"};
  h = MakeNrrdHeader("'<f4'", {7, 9}, "data", g);
  REQUIRE(h.ok());
  CHECK(Contains(*h, "sizes: 9 7 1\nspace dimension: 3\n"));
  CHECK(Contains(*h, "space directions: (1.5,0,0) (0,0.25,0) (0,0,1)\n"));
  CHECK_FALSE(Contains(*h, "space origin"));
  CHECK(Contains(*h, "space units: \"um\" \"um\" \"\"\n"));
  CHECK(Contains(*h, "labels: \"col\" \"row\" \"\"\n"));
  g.origin = {4, -2};
  h = MakeNrrdHeader("'<f4'", {7, 9}, "data", g);
  REQUIRE(h.ok());
  CHECK(Contains(*h, "space origin: (-2,4,0)\n"));
}

TEST_CASE("MetaImage and ENVI headers carry spacing and origin") {
  auto h = MakeMetaImageHeader("'<f4'", {5, 6, 17}, "data", Geometry3());
  REQUIRE(h.ok());
  CHECK(Contains(*h,
                 "CompressedData = False\nOffset = 10 20 30\nElementSpacing = 0.5 2 3\n"
                 "DimSize = 17 6 5\n"));
  h = MakeEnviHeader("'<f4'", {5, 6, 17}, Geometry3());
  REQUIRE(h.ok());
  CHECK(Contains(*h, "byte order = 0\nmap info = {Arbitrary, 1.5, 1.5, 10, 20, 0.5, -2, 0}\n"));
  CHECK_FALSE(Contains(MakeEnviHeader("'<f4'", {5, 6, 17}).value(), "map info"));
}

TEST_CASE("NIfTI-1 header: pixdim, qform and units from the geometry") {
  auto h = MakeNifti1Header("'>f4'", {5, 6, 17}, Geometry3());
  REQUIRE(h.ok());
  NiftiReader r(*h);
  CHECK(r.F(80) == 0.5f);  // pixdim[1..3], fastest first
  CHECK(r.F(84) == 2.0f);
  CHECK(r.F(88) == 3.0f);
  CHECK(r.F(76) == 1.0f);   // qfac
  CHECK(r.U(252, 2) == 1);  // qform_code: scanner
  CHECK(r.U(254, 2) == 0);  // sform_code
  CHECK(r.F(256) == 0.0f);  // quatern_b, c, d: no rotation
  CHECK(r.F(260) == 0.0f);
  CHECK(r.F(264) == 0.0f);
  CHECK(r.F(268) == 10.0f);  // qoffset_x, y, z
  CHECK(r.F(272) == 20.0f);
  CHECK(r.F(276) == 30.0f);
  CHECK(static_cast<uint8_t>((*h)[123]) == 2);  // xyzt_units: mm
  format::VoxelGeometry g;
  g.units = {"s", "um", "um", "um"};
  h = MakeNifti1Header("'<f4'", {2, 3, 4, 5}, g);
  REQUIRE(h.ok());
  CHECK(static_cast<uint8_t>((*h)[123]) == (3 | 8));  // um, s
  CHECK(NiftiReader(*h).U(252, 2) == 0);              // units alone: no qform
}

}  // namespace
}  // namespace b2ndfs::views
