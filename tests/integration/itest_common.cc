#include "itest_common.h"

#include <b2nd.h>
#include <blosc2.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "../fixtures/whole_chunks.h"  // the reference decoding, shared with b2nd_fixture

extern char** environ;

namespace b2ndfs::itest {

Shape IBox::Extent() const {
  Shape e(start.size());
  for (size_t i = 0; i < start.size(); ++i) e[i] = stop[i] - start[i];
  return e;
}

int64_t IBox::NumItems() const { return Product(Extent()); }

IBox FullBox(const Shape& shape) { return IBox{Shape(shape.size(), 0), shape}; }

std::string BoxString(const IBox& box) {
  std::string out = "[";
  for (size_t i = 0; i < box.start.size(); ++i) {
    if (i != 0) out += ",";
    out += std::to_string(box.start[i]) + ":" + std::to_string(box.stop[i]);
  }
  return out + "]";
}

int64_t Product(const Shape& shape) {
  int64_t p = 1;
  for (int64_t v : shape) p *= v;
  return p;
}

namespace {

std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> fields;
  size_t pos = 0;
  while (true) {
    const size_t tab = line.find('\t', pos);
    fields.push_back(line.substr(pos, tab == std::string::npos ? tab : tab - pos));
    if (tab == std::string::npos) break;
    pos = tab + 1;
  }
  return fields;
}

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  if (s.empty() || s == "-") return out;
  size_t pos = 0;
  while (true) {
    const size_t comma = s.find(',', pos);
    out.push_back(s.substr(pos, comma == std::string::npos ? comma : comma - pos));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

std::vector<std::string> ReadLines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw TestError("cannot read " + path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    lines.push_back(line);
  }
  return lines;
}

}  // namespace

std::string ManifestEntry::Format() const {
  if (kind.find("caterva") != std::string::npos) return "caterva";
  if (kind.find("schunk") != std::string::npos) return "schunk";
  return "b2nd";
}

std::vector<ManifestEntry> ReadManifest(const std::string& path) {
  std::vector<ManifestEntry> entries;
  for (const std::string& line : ReadLines(path)) {
    const auto f = SplitTabs(line);
    if (f.size() != 5) throw TestError(path + ": bad line: " + line);
    entries.push_back({f[0], f[1], f[2], f[3], std::stoll(f[4])});
  }
  if (entries.empty()) throw TestError(path + ": no entries");
  return entries;
}

std::vector<HostileEntry> ReadHostileManifest(const std::string& path) {
  std::vector<HostileEntry> entries;
  for (const std::string& line : ReadLines(path)) {
    const auto f = SplitTabs(line);
    if (f.size() != 6) throw TestError(path + ": bad line: " + line);
    entries.push_back(
        {f[0], f[1], SplitCommas(f[2]), SplitCommas(f[3]), f[4] == "-" ? "" : f[4], f[5]});
  }
  if (entries.empty()) throw TestError(path + ": no entries");
  return entries;
}

HostileExpectation ExpectationFor(const HostileEntry& e) {
  if (e.defect == "chunk-corrupt" || e.defect == "sparse-missing-chunk") {
    return HostileExpectation::kPartial;
  }
  // README.md, "What it reads": the oldest caterva metalayer has 4 entries (no blockshape);
  // b2ndfs may read it as blocks == chunks, as the chunks here allow.
  if (e.defect == "meta-dtype" || e.name == "caterva_missing_blockshape.caterva") {
    return HostileExpectation::kDecodesOrError;
  }
  // plugin-*: README.md ("What it reads", "Errors") shows the array (meta.json names what is
  // missing) and its data reads EIO.
  if (e.defect == "meta-inconsistent" || e.defect == "plugin-codec" ||
      e.defect == "plugin-filter") {
    return HostileExpectation::kErrorOrEio;
  }
  // A lenient reader may still find every chunk of these: then the bytes
  // must be the intact array's.
  if (e.defect == "frame-size" || e.name == "truncated_trailer.b2nd" ||
      (e.defect == "header-bitflip" && e.name != "header_bitflip_magic.b2nd")) {
    return HostileExpectation::kErrorOrSame;
  }
  return HostileExpectation::kError;
}

// ---------------------------------------------------------------------------

Reference::~Reference() = default;

std::unique_ptr<Reference> Reference::Open(const std::string& path, int64_t itemsize) {
  std::unique_ptr<Reference> ref(new Reference());
  ref->path_ = path;
  const bool raw = path.size() > 4 && path.compare(path.size() - 4, 4, ".raw") == 0;
  if (raw) {
    ref->raw_ = true;
    ref->full_ = ReadWholeFile(path);
    ref->itemsize_ = itemsize;
    if (itemsize <= 0 || ref->full_.size() % itemsize != 0) {
      throw TestError(path + ": size not a multiple of itemsize");
    }
    ref->shape_ = {static_cast<int64_t>(ref->full_.size()) / itemsize};
    const Bytes json_bytes = ReadWholeFile(path + ".json");
    std::string error;
    auto json = ParseJson(
        std::string_view(reinterpret_cast<const char*>(json_bytes.data()), json_bytes.size()),
        &error);
    const Json* items = json ? json->Find("chunk_items") : nullptr;
    auto lengths = items ? items->IntArray() : std::nullopt;
    if (!lengths) throw TestError(path + ".json: no chunk_items " + error);
    int64_t begin = 0;
    for (size_t i = 0; i < lengths->size(); ++i) {
      ref->chunk_boxes_.push_back(IBox{{begin}, {begin + (*lengths)[i]}});
      ref->chunk_names_.push_back(std::to_string(i));
      begin += (*lengths)[i];
    }
    if (begin != ref->shape_[0]) {
      throw TestError(path + ".json: chunk_items do not add up");
    }
    return ref;
  }
  // A contiguous frame is decoded from memory (a copy): c-blosc2's chunks of
  // a file-backed frame are lazy and lack their ZSTD dictionary.
  b2nd_array_t* array = nullptr;
  int rc = 0;
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    Bytes frame = ReadWholeFile(path);
    rc = b2nd_from_cframe(frame.data(), static_cast<int64_t>(frame.size()), true, &array);
  } else {
    rc = b2nd_open(path.c_str(), &array);
  }
  if (rc < 0 || array == nullptr) {
    throw TestError(path + ": cannot open as a b2nd container: " + print_error(rc));
  }
  std::unique_ptr<b2nd_array_t, int (*)(b2nd_array_t*)> owner(array, b2nd_free);

  ref->shape_.assign(array->shape, array->shape + array->ndim);
  ref->itemsize_ = array->sc->typesize;
  if (array->dtype != nullptr) ref->dtype_ = array->dtype;
  if (itemsize > 0 && itemsize != ref->itemsize_) {
    throw TestError(path + ": manifest itemsize " + std::to_string(itemsize) +
                    " but the reference has " + std::to_string(ref->itemsize_));
  }
  if (array->ndim > 0) {
    Shape grid(array->ndim);
    for (int i = 0; i < array->ndim; ++i) {
      const int64_t c = array->chunkshape[i];
      grid[i] = array->shape[i] == 0 ? 0 : (array->shape[i] + c - 1) / c;
    }
    const int64_t nchunks = Product(grid);
    for (int64_t lin = 0; lin < nchunks; ++lin) {
      Shape coords(array->ndim);
      int64_t rest = lin;
      for (int i = array->ndim - 1; i >= 0; --i) {
        coords[i] = rest % grid[i];
        rest /= grid[i];
      }
      IBox box;
      for (int i = 0; i < array->ndim; ++i) {
        box.start.push_back(coords[i] * array->chunkshape[i]);
        box.stop.push_back(
            std::min<int64_t>((coords[i] + 1) * array->chunkshape[i], array->shape[i]));
      }
      ref->chunk_boxes_.push_back(box);
      ref->chunk_names_.push_back(ChunkName(coords));
    }
  }
  // Every chunk decompressed whole, never c-blosc2's slice path: c-blosc2
  // 3.3.5's b2nd_get_slice_cbuffer returns wrong items for chunks that must
  // be decoded whole (docs/blosc2-3.3-notes.md, "c-blosc2's slice path").
  const std::string error = testref::DecodeWholeChunks(array, ref->full_);
  if (!error.empty()) throw TestError(path + ": " + error);
  return ref;
}

Bytes Reference::Slice(const IBox& box) const {
  const int64_t n = box.NumItems() * itemsize_;
  Bytes out(static_cast<size_t>(n));
  if (n == 0) return out;
  if (raw_) {
    std::memcpy(out.data(), full_.data() + box.start[0] * itemsize_, out.size());
    return out;
  }
  return CopyBox(full_, shape_, itemsize_, box);
}

Bytes CopyBox(const Bytes& full, const Shape& shape, int64_t itemsize, const IBox& box) {
  const size_t ndim = shape.size();
  const Shape extent = box.Extent();
  Bytes out(static_cast<size_t>(Product(extent) * itemsize));
  if (out.empty()) return out;
  if (ndim == 0) return Bytes(full.begin(), full.begin() + itemsize);
  Shape strides(ndim, 1);
  for (size_t i = ndim - 1; i-- > 0;) strides[i] = strides[i + 1] * shape[i + 1];
  const size_t row = static_cast<size_t>(extent[ndim - 1] * itemsize);
  Shape idx(ndim, 0);
  uint8_t* dst = out.data();
  while (true) {
    int64_t lin = 0;
    for (size_t i = 0; i < ndim; ++i) lin += (box.start[i] + idx[i]) * strides[i];
    std::memcpy(dst, full.data() + lin * itemsize, row);
    dst += row;
    size_t k = ndim - 1;
    while (k-- > 0) {
      if (++idx[k] < extent[k]) break;
      idx[k] = 0;
    }
    if (k == static_cast<size_t>(-1)) break;
  }
  return out;
}

std::string ChunkName(const Shape& coords) {
  std::string out;
  for (size_t i = 0; i < coords.size(); ++i) {
    if (i != 0) out += ".";
    out += std::to_string(coords[i]);
  }
  return out;
}

int SliceWidth(int64_t n) { return n <= 1 ? 1 : static_cast<int>(std::to_string(n - 1).size()); }

std::string SliceName(const Shape& shape, int axis, int64_t index, bool padded) {
  std::string idx = std::to_string(index);
  if (padded) {
    const int width = SliceWidth(shape[axis]);
    if (static_cast<int>(idx.size()) < width) {
      idx.insert(0, width - idx.size(), '0');
    }
  }
  return "slices/" + std::to_string(axis) + "/" + idx;
}

IBox SliceBox(const Shape& shape, int axis, int64_t index) {
  IBox box = FullBox(shape);
  box.start[axis] = index;
  box.stop[axis] = index + 1;
  return box;
}

std::vector<int64_t> SampleIndices(int64_t n, size_t max_count, std::mt19937_64& rng) {
  std::vector<int64_t> out;
  if (n <= 0) return out;
  if (static_cast<uint64_t>(n) <= max_count) {
    for (int64_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  std::set<int64_t> picked = {0, n - 1};
  std::uniform_int_distribution<int64_t> pick(1, n - 2);
  while (picked.size() < max_count) picked.insert(pick(rng));
  return std::vector<int64_t>(picked.begin(), picked.end());
}

IBox RandomBox(const Shape& shape, std::mt19937_64& rng) {
  IBox box = FullBox(shape);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) continue;
    std::uniform_int_distribution<int64_t> start(0, shape[i] - 1);
    box.start[i] = start(rng);
    std::uniform_int_distribution<int64_t> len(1, shape[i] - box.start[i]);
    box.stop[i] = box.start[i] + len(rng);
  }
  if (!shape.empty() && rng() % 10 == 0) {  // an empty box
    const size_t axis = rng() % shape.size();
    box.stop[axis] = box.start[axis];
  }
  return box;
}

// ---------------------------------------------------------------------------

void Report::Fail(const std::string& container, const std::string& file, const std::string& what) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++failures_;
  if (failures_ <= max_printed_) {
    std::fprintf(stderr, "MISMATCH %s %s: %s\n", container.c_str(), file.c_str(), what.c_str());
  } else if (failures_ == max_printed_ + 1) {
    std::fprintf(stderr, "(further mismatches not printed)\n");
  }
}

bool Report::Equal(const uint8_t* got, size_t got_size, const uint8_t* want, size_t want_size,
                   const std::string& container, const std::string& file, int64_t offset) {
  const size_t n = std::min(got_size, want_size);
  const auto diff = std::mismatch(got, got + n, want);
  if (diff.first == got + n && got_size == want_size) {
    Count();
    return true;
  }
  char what[256];
  if (diff.first != got + n) {
    const size_t at = static_cast<size_t>(diff.first - got);
    std::snprintf(what, sizeof what,
                  "read of %zu bytes at offset %" PRId64 ": byte at offset %" PRId64
                  " is 0x%02x, expected 0x%02x",
                  want_size, offset, offset + static_cast<int64_t>(at), *diff.first, *diff.second);
  } else {
    std::snprintf(what, sizeof what, "read at offset %" PRId64 " gave %zu bytes, expected %zu",
                  offset, got_size, want_size);
  }
  Fail(container, file, what);
  return false;
}

void Report::Count(uint64_t checks) {
  std::lock_guard<std::mutex> lock(mutex_);
  checks_ += checks;
}

uint64_t Report::failures() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failures_;
}

uint64_t Report::checks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return checks_;
}

// ---------------------------------------------------------------------------

int RunCommand(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0) {
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string MakeTempDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + ".XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) {
    throw TestError("mkdtemp " + templ + ": " + std::strerror(errno));
  }
  return templ;
}

Bytes ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TestError("cannot read " + path);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

}  // namespace b2ndfs::itest
