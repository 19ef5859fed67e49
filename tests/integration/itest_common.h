// itest_common: what the integration tests share.
//
// What: the fixture manifests (tests/fixtures, `b2nd_fixture make|hostile`),
// c-blosc2 references (a b2nd container whose chunks c-blosc2 decompresses
// whole, tests/fixtures/whole_chunks.h, never its slice path, which misreads
// chunks that must be decoded whole: docs/blosc2-3.3-notes.md; or a .raw file
// for plain super-chunks), the names b2ndfs gives chunk and slice files
// (README.md, "Layout"), a strict little JSON parser for meta.json, an .npy
// header parser, and a thread-safe mismatch report. Nothing here uses the
// b2ndfs core: the references must stay independent of what they check.
// Ownership: a Reference owns the whole array's bytes (decoded at Open()).
// Thread-safety: a Reference is immutable after Open(): Slice(), full() and
// every free function may be used from any thread. Report is internally
// locked.
// Errors: set-up problems (unreadable manifest, c-blosc2 refusing a
// reference) throw TestError; comparisons go to a Report.
#ifndef B2NDFS_TESTS_INTEGRATION_ITEST_COMMON_H_
#define B2NDFS_TESTS_INTEGRATION_ITEST_COMMON_H_

#include <b2nd.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace b2ndfs::itest {

using Bytes = std::vector<uint8_t>;
using Shape = std::vector<int64_t>;

class TestError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Half-open box [start, stop) per axis; a 0-D box holds one item.
struct IBox {
  Shape start;
  Shape stop;
  Shape Extent() const;
  int64_t NumItems() const;
  bool operator==(const IBox&) const = default;
};
IBox FullBox(const Shape& shape);
std::string BoxString(const IBox& box);  // "[0:4,2:3]"
int64_t Product(const Shape& shape);

// ---------------------------------------------------------------------------
// Manifests.

// One line of REFDIR/manifest.tsv.
struct ManifestEntry {
  std::string rel;        // container path below OUTDIR
  std::string kind;       // b2nd | sframe-b2nd | caterva | ... | schunk
  std::string reference;  // below REFDIR
  std::string description;
  int64_t itemsize = 0;
  // "b2nd", "caterva" or "schunk": what meta.json's "format" must say.
  std::string Format() const;
};
std::vector<ManifestEntry> ReadManifest(const std::string& path);

// One line of hostile.tsv.
struct HostileEntry {
  std::string name;
  std::string defect;
  std::vector<std::string> readable_chunks;  // names as b2ndfs shows them
  std::vector<std::string> bad_chunks;
  std::string reference;  // relative to the manifest's directory, or empty
  std::string description;
};
std::vector<HostileEntry> ReadHostileManifest(const std::string& path);

// What b2ndfs must do with a hostile container.
enum class HostileExpectation {
  kError,           // undecodable: meta.json holds "error", no other files
  kErrorOrEio,      // either the above, or every data read fails with EIO
  kErrorOrSame,     // the above, or reads return the intact array's bytes
  kPartial,         // decodes; readable chunks exact, bad chunks EIO
  kDecodesOrError,  // valid content (odd dtype): either is fine
};
HostileExpectation ExpectationFor(const HostileEntry& entry);

// ---------------------------------------------------------------------------
// References.

class Reference {
 public:
  // `path` is a b2nd/caterva container or a .raw file (plain super-chunk,
  // `itemsize`-byte items, chunk lengths from path + ".json").
  static std::unique_ptr<Reference> Open(const std::string& path, int64_t itemsize);
  ~Reference();
  Reference(const Reference&) = delete;
  Reference& operator=(const Reference&) = delete;

  bool raw() const { return raw_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  const Shape& shape() const { return shape_; }
  int64_t itemsize() const { return itemsize_; }
  int64_t nbytes() const { return Product(shape_) * itemsize_; }
  // The b2nd dtype string of a b2nd reference (empty for .raw).
  const std::string& dtype() const { return dtype_; }
  // The whole array, C order (its chunks decompressed whole by c-blosc2 at
  // Open()).
  const Bytes& full() const { return full_; }
  // Chunk files b2ndfs must show: boxes and names, in chunk index order.
  // Empty for a 0-D array (it has no chunks/ directory).
  const std::vector<IBox>& chunk_boxes() const { return chunk_boxes_; }
  const std::vector<std::string>& chunk_names() const { return chunk_names_; }

  // The C-order bytes of `box`, cut out of full().
  Bytes Slice(const IBox& box) const;

 private:
  Reference() = default;
  std::string path_;
  bool raw_ = false;
  Shape shape_;
  int64_t itemsize_ = 0;
  std::string dtype_;
  Bytes full_;
  std::vector<IBox> chunk_boxes_;
  std::vector<std::string> chunk_names_;
};

// The C-order bytes of `box` cut out of an array whose C-order bytes are
// `full` (a brute-force reference, for threads).
Bytes CopyBox(const Bytes& full, const Shape& shape, int64_t itemsize, const IBox& box);

// "0.3.1" for grid coordinates {0, 3, 1}.
std::string ChunkName(const Shape& coords);
// Width of slice names on an axis of length n: digits of n - 1 (at least 1).
int SliceWidth(int64_t n);
// "slices/A/IDX" with IDX zero-padded; `padded` false gives the plain number.
std::string SliceName(const Shape& shape, int axis, int64_t index, bool padded = true);
IBox SliceBox(const Shape& shape, int axis, int64_t index);
// All of [0, n) when n <= max_count, else 0, n - 1 and random others, sorted.
std::vector<int64_t> SampleIndices(int64_t n, size_t max_count, std::mt19937_64& rng);
// A random box inside `shape`: usually non-empty, sometimes one empty axis.
IBox RandomBox(const Shape& shape, std::mt19937_64& rng);

// ---------------------------------------------------------------------------
// JSON (strict RFC 8259 syntax; numbers kept as double and as text).

struct Json {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  double number = 0;
  std::string text;  // a string's value, or a number's literal
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;

  const Json* Find(std::string_view key) const;
  std::optional<int64_t> Int() const;
  std::optional<Shape> IntArray() const;
};
// Parses one JSON value (surrounding whitespace allowed); nullopt and *error
// on any syntax error.
std::optional<Json> ParseJson(std::string_view text, std::string* error);

// ---------------------------------------------------------------------------
// .npy

struct NpyHeader {
  int major = 0;
  size_t total_length = 0;  // magic + version + length field + dict + '\n'
  std::string dict;         // the Python dict literal, without the '\n'
};
// Checks magic, version, length field, padding and the trailing newline.
std::optional<NpyHeader> ParseNpyHeader(const uint8_t* data, size_t size, std::string* error);
// "(30, 40)", "(1000,)", "()": as numpy writes the shape.
std::string NpyShapeTuple(const Shape& shape);
// Checks the dict of an .npy header against the array it should describe.
bool CheckNpyDict(const std::string& dict, const Shape& shape, std::string* error);

// ---------------------------------------------------------------------------
// Reporting.

class Report {
 public:
  explicit Report(size_t max_printed = 40) : max_printed_(max_printed) {}
  // Records a failure: "MISMATCH <container> <file> <what>".
  void Fail(const std::string& container, const std::string& file, const std::string& what);
  // Compares `got` with `want`; on a difference records the first differing
  // byte, counted from `offset` (the file offset of got[0]).
  bool Equal(const uint8_t* got, size_t got_size, const uint8_t* want, size_t want_size,
             const std::string& container, const std::string& file, int64_t offset);
  void Count(uint64_t checks = 1);  // successful comparisons, for the summary
  uint64_t failures() const;
  uint64_t checks() const;

 private:
  mutable std::mutex mutex_;  // leaf lock
  size_t max_printed_;
  uint64_t failures_ = 0;
  uint64_t checks_ = 0;
};

// ---------------------------------------------------------------------------
// Processes and files.

// Runs argv (no shell) and returns its exit status (-1 if it did not exit).
int RunCommand(const std::vector<std::string>& argv);
// mkdtemp under $TMPDIR (or /tmp).
std::string MakeTempDir(const std::string& prefix);
Bytes ReadWholeFile(const std::string& path);

}  // namespace b2ndfs::itest

#endif  // B2NDFS_TESTS_INTEGRATION_ITEST_COMMON_H_
