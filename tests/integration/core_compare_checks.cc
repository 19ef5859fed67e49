// core_compare's checks of one container through the b2ndfs core (no FUSE)
// against its reference: meta.json, data, data.npy, chunks, slices and
// random boxes, found through the views (the top of core_compare.cc says more).
#include <blosc2.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/geometry/geometry.h"
#include "b2ndfs/source/byte_source.h"
#include "b2ndfs/source/descriptor_cache.h"
#include "b2ndfs/store/container.h"
#include "b2ndfs/store/worker_pool.h"
#include "b2ndfs/views/view.h"
#include "core_compare.h"
#include "itest_common.h"

namespace b2ndfs::itest {
namespace {

constexpr int kRandomBoxes = 50;
// Axes up to this long have every slice checked; longer ones are sampled.
constexpr int64_t kAllSlicesUpTo = 1000;
constexpr size_t kSampledSlices = 24;

geometry::Box ToBox(const IBox& box) { return geometry::Box{box.start, box.stop}; }

std::string FileName(const Reference& ref, const VirtualFile& f) {
  switch (f.kind) {
    case FileKind::kMetaJson:
      return "meta.json";
    case FileKind::kData:
      return "data";
    case FileKind::kDataNpy:
      return "data.npy";
    case FileKind::kChunk:
      return "chunks/" + (f.index < static_cast<int64_t>(ref.chunk_names().size())
                              ? ref.chunk_names()[f.index]
                              : "#" + std::to_string(f.index));
    case FileKind::kSlice:
      return SliceName(ref.shape(), f.axis, f.index);
  }
  return "?";
}

// The views every container is opened with (they render meta.json's "files")
// and looked up in.
const views::Registry& Views() {
  static const std::shared_ptr<const views::Registry> registry = views::Registry::Default();
  return *registry;
}

std::atomic<uint64_t> g_next_cache_id{1};

}  // namespace

// Opens the container at `path` as the vfs does (a local source, a fresh
// cache id). nullptr, with the reason in *error, when the source itself
// cannot be opened.
std::shared_ptr<const Container> OpenContainer(const std::string& path,
                                               source::DescriptorCache* descriptors,
                                               store::StoreContext* ctx, std::string* error) {
  auto opened = source::OpenLocal(path, descriptors);
  if (!opened.ok()) {
    *error = opened.status().message();
    return nullptr;
  }
  return Container::Open(std::move(opened).value(), ctx, g_next_cache_id.fetch_add(1), &Views());
}

// Walks a slash-separated path from the container directory.
Result<NodePtr> Walk(const Container& c, const std::string& path) {
  NodePtr node = Views().Root();
  size_t pos = 0;
  while (pos <= path.size()) {
    const size_t slash = path.find('/', pos);
    const std::string part =
        path.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
    B2NDFS_ASSIGN_OR_RETURN(node, node->Lookup(c, part));
    if (slash == std::string::npos) break;
    pos = slash + 1;
  }
  return node;
}

// The node of a virtual file, looked up by the name the reference gives it.
Result<NodePtr> Find(const Subject& s, const VirtualFile& f) {
  return Walk(*s.container, FileName(*s.ref, f));
}

namespace {

// What FileBox used to check: the file streams `box`. Its node is a file
// with the name it was looked up by and the size of the box (CheckFile
// compares its bytes).
bool CheckStreams(const Subject& s, const VirtualFile& f, const IBox& box, Report& report) {
  const std::string file = FileName(*s.ref, f);
  auto node = Find(s, f);
  if (!node.ok()) {
    report.Fail(s.name, file, "lookup failed: " + node.status().message());
    return false;
  }
  const std::string last = file.substr(file.rfind('/') + 1);
  const int64_t size = (*node)->Size(*s.container);
  const int64_t bytes = ToBox(box).NumItems() * s.ref->itemsize();
  if ((*node)->IsDirectory() || (*node)->name() != last || size != bytes) {
    report.Fail(s.name, file,
                "does not stream " + BoxString(box) + ": node \"" + (*node)->name() + "\"" +
                    ((*node)->IsDirectory() ? " (a directory)" : "") + " of " +
                    std::to_string(size) + " bytes, expected " + std::to_string(bytes));
    return false;
  }
  return true;
}

}  // namespace

// Reads [offset, offset + length) of a virtual file and compares it with
// `want` (the whole file's expected bytes).
void CheckRead(const Subject& s, const VirtualFile& f, const Bytes& want, int64_t offset,
               size_t length, Report& report) {
  Bytes got(length + 1, 0xEE);  // one guard byte: Read must not write more
  const std::string file = FileName(*s.ref, f);
  auto node = Find(s, f);
  if (!node.ok()) {
    report.Fail(s.name, file, "lookup failed: " + node.status().message());
    return;
  }
  auto n = (*node)->Read(*s.container, offset, length, got.data());
  if (!n.ok()) {
    report.Fail(s.name, file,
                "read of " + std::to_string(length) + " bytes at offset " + std::to_string(offset) +
                    " failed: " + n.status().message());
    return;
  }
  const int64_t size = static_cast<int64_t>(want.size());
  const size_t expect =
      offset >= size ? 0 : static_cast<size_t>(std::min<int64_t>(length, size - offset));
  if (got[*n] != 0xEE && *n == length) {
    report.Fail(s.name, file, "Read wrote past the length it returned");
  }
  report.Equal(got.data(), *n, want.data() + std::min<int64_t>(offset, size), expect, s.name, file,
               offset);
}

namespace {

// Whole-file read plus reads at awkward offsets and lengths.
void CheckFile(const Subject& s, const VirtualFile& f, const Bytes& want, std::mt19937_64& rng,
               int random_reads, Report& report) {
  const int64_t size = static_cast<int64_t>(want.size());
  auto node = Find(s, f);
  if (!node.ok()) {
    report.Fail(s.name, FileName(*s.ref, f), "lookup failed: " + node.status().message());
    return;
  }
  const int64_t got_size = (*node)->Size(*s.container);
  if (got_size != size) {
    report.Fail(s.name, FileName(*s.ref, f),
                "FileSize " + std::to_string(got_size) + ", expected " + std::to_string(size));
    return;
  }
  CheckRead(s, f, want, 0, want.size(), report);
  CheckRead(s, f, want, size, 7, report);         // at EOF: nothing
  CheckRead(s, f, want, size + 4096, 1, report);  // past EOF: nothing
  if (size == 0) return;
  static const size_t kLengths[] = {1, 3, 4095, 4096, 4097, 65537};
  for (int i = 0; i < random_reads; ++i) {
    const size_t length = i < 6 ? kLengths[i] : 1 + rng() % (size_t{1} << (rng() % 19));
    int64_t offset = static_cast<int64_t>(rng() % static_cast<uint64_t>(size));
    if (offset % 2 == 0 && offset + 1 < size) ++offset;  // odd offsets
    CheckRead(s, f, want, offset, length, report);
  }
  // Straddling the end of the file.
  CheckRead(s, f, want, std::max<int64_t>(0, size - 3), 4097, report);
}

void CheckBox(const Subject& s, const IBox& box, const Bytes& want, Report& report) {
  Bytes got(want.size() + 1, 0xEE);
  Status status = s.container->ReadArrayBox(ToBox(box), got.data());
  if (!status.ok()) {
    report.Fail(s.name, "ReadArrayBox" + BoxString(box), "failed: " + status.message());
    return;
  }
  if (got.back() != 0xEE) report.Fail(s.name, "ReadArrayBox" + BoxString(box), "wrote past");
  report.Equal(got.data(), want.size(), want.data(), want.size(), s.name,
               "ReadArrayBox" + BoxString(box), 0);
}

void CheckMeta(const Subject& s, const ManifestEntry& e, Report& report) {
  const Container& c = *s.container;
  const std::string& meta = c.meta_json();
  auto f = Find(s, {FileKind::kMetaJson});
  if (!f.ok()) {
    report.Fail(s.name, "meta.json", "lookup failed: " + f.status().message());
  } else {
    if ((*f)->Size(c) != static_cast<int64_t>(meta.size())) {
      report.Fail(s.name, "meta.json", "FileSize differs from meta_json().size()");
    }
    Bytes got(meta.size());
    auto n = (*f)->Read(c, 0, meta.size(), got.data());
    if (!n.ok() || *n != meta.size() || std::memcmp(got.data(), meta.data(), meta.size()) != 0) {
      report.Fail(s.name, "meta.json", "Read differs from meta_json()");
    }
  }
  if (meta.empty() || meta[0] != '{' || meta.find("\"shape\"") == std::string::npos) {
    report.Fail(s.name, "meta.json", "does not start with '{' or lacks \"shape\"");
  }
  std::string error;
  auto json = ParseJson(meta, &error);
  if (!json) {
    report.Fail(s.name, "meta.json", error);
    return;
  }
  static const char* kKeys[] = {
      "format",       "version",  "ndim",       "shape",  "chunkshape", "blockshape", "dtype",
      "dtype_format", "itemsize", "nbytes",     "cbytes", "cratio",     "nchunks",    "codec",
      "clevel",       "filters",  "metalayers", "vlmeta", "files"};
  for (const char* key : kKeys) {
    if (json->Find(key) == nullptr)
      report.Fail(s.name, "meta.json", std::string("no \"") + key + "\"");
  }
  const Json* format = json->Find("format");
  if (format && format->text != e.Format()) {
    report.Fail(s.name, "meta.json",
                "format \"" + format->text + "\", expected \"" + e.Format() + "\"");
  }
  const Json* shape = json->Find("shape");
  if (shape && shape->IntArray() != std::optional<Shape>(s.ref->shape())) {
    report.Fail(s.name, "meta.json",
                "shape differs from the reference " + BoxString(FullBox(s.ref->shape())));
  }
  const Json* ndim = json->Find("ndim");
  if (ndim && ndim->Int() != std::optional<int64_t>(s.ref->ndim())) {
    report.Fail(s.name, "meta.json", "ndim differs");
  }
  const Json* itemsize = json->Find("itemsize");
  if (itemsize && itemsize->Int() != std::optional<int64_t>(s.ref->itemsize())) {
    report.Fail(s.name, "meta.json", "itemsize differs");
  }
  const Json* nbytes = json->Find("nbytes");
  if (nbytes && nbytes->Int() != std::optional<int64_t>(s.ref->nbytes())) {
    report.Fail(s.name, "meta.json",
                "nbytes " + nbytes->text + ", expected " + std::to_string(s.ref->nbytes()));
  }
  const Json* dtype = json->Find("dtype");
  if (dtype && e.Format() != "b2nd" && dtype->type != Json::Type::kNull) {
    report.Fail(s.name, "meta.json", "dtype should be null for a " + e.Format() + " container");
  }
  // b2nd references are byte-identical copies (or twins with the same dtype).
  if (dtype && e.Format() == "b2nd" && dtype->type == Json::Type::kString &&
      dtype->text != s.ref->dtype()) {
    report.Fail(s.name, "meta.json",
                "dtype \"" + dtype->text + "\", expected \"" + s.ref->dtype() + "\"");
  }
  if (dtype && e.Format() == "b2nd" && dtype->type != Json::Type::kString) {
    report.Fail(s.name, "meta.json", "dtype of a b2nd container is not a string");
  }
  // files: each kind's size is the virtual file's size.
  const Json* files = json->Find("files");
  const Json* files_data = files ? files->Find("data") : nullptr;
  const Json* files_npy = files ? files->Find("data.npy") : nullptr;
  const Json* data_size = files_data ? files_data->Find("size") : nullptr;
  const Json* npy_size = files_npy ? files_npy->Find("size") : nullptr;
  if (!data_size || data_size->Int() != std::optional<int64_t>(s.ref->nbytes())) {
    report.Fail(s.name, "meta.json", "files.data.size is not the data size");
  }
  auto npy_file = Find(s, {FileKind::kDataNpy});
  if (!npy_size || !npy_file.ok() ||
      npy_size->Int() != std::optional<int64_t>((*npy_file)->Size(c))) {
    report.Fail(s.name, "meta.json", "files[\"data.npy\"].size is not data.npy's size");
  }
  // metalayers.names lists the shape metalayer; user layers are shown too.
  const Json* layers = json->Find("metalayers");
  const Json* names = layers ? layers->Find("names") : nullptr;
  auto has_layer = [&](const std::string& name) {
    if (!names || names->type != Json::Type::kArray) return false;
    for (const Json& item : names->items) {
      if (item.text == name) return true;
    }
    return false;
  };
  if (e.Format() != "schunk" && !has_layer(e.Format())) {
    report.Fail(s.name, "meta.json", "metalayers.names lacks \"" + e.Format() + "\"");
  }
  if (e.rel == "frames/meta.b2nd" || e.rel == "frames/meta_sparse.b2nd") {
    if (!has_layer("fixture")) {
      report.Fail(s.name, "meta.json", "metalayers.names lacks the user layer \"fixture\"");
    }
    const Json* vl = json->Find("vlmeta");
    const Json* attrs = vl ? vl->Find("attrs") : nullptr;
    const Json* units = attrs ? attrs->Find("units") : nullptr;
    const Json* scale = attrs ? attrs->Find("scale") : nullptr;
    const Json* history = vl ? vl->Find("history") : nullptr;
    const Json* opaque = vl ? vl->Find("opaque") : nullptr;
    if (!units || units->type != Json::Type::kString || units->text != "K" || !scale ||
        scale->type != Json::Type::kNumber || scale->number != 0.5) {
      report.Fail(s.name, "meta.json", "vlmeta.attrs is not {units: \"K\", scale: 0.5}");
    }
    if (!history || history->type != Json::Type::kArray) {
      report.Fail(s.name, "meta.json", "vlmeta.history is not an array");
    }
    // Not msgpack: base64, as a string or as {"base64": "..."}.
    const Json* b64 =
        opaque && opaque->type == Json::Type::kObject ? opaque->Find("base64") : opaque;
    if (!b64 || b64->type != Json::Type::kString || b64->text.empty() ||
        b64->text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
                                    "qrstuvwxyz0123456789+/=") != std::string::npos) {
      report.Fail(s.name, "meta.json", "vlmeta.opaque is not base64");
    }
  }
  report.Count();
}

void CheckNpy(Subject& s, Report& report, std::mt19937_64& rng) {
  const Container& c = *s.container;
  const VirtualFile f{FileKind::kDataNpy};
  auto node = Find(s, f);
  if (!node.ok()) {
    report.Fail(s.name, "data.npy", "lookup failed: " + node.status().message());
    return;
  }
  const int64_t size = (*node)->Size(c);
  const int64_t body = s.ref->nbytes();
  if (size < body + 16) {
    report.Fail(s.name, "data.npy",
                "FileSize " + std::to_string(size) + " too small for " + std::to_string(body) +
                    " data bytes");
    return;
  }
  Bytes npy(static_cast<size_t>(size));
  auto n = (*node)->Read(c, 0, npy.size(), npy.data());
  if (!n.ok() || *n != npy.size()) {
    report.Fail(s.name, "data.npy",
                "whole read failed: " + (n.ok() ? std::string("short") : n.status().message()));
    return;
  }
  std::string error;
  auto header = ParseNpyHeader(npy.data(), npy.size(), &error);
  if (!header || !CheckNpyDict(header->dict, s.ref->shape(), &error)) {
    report.Fail(s.name, "data.npy", error);
    return;
  }
  if (static_cast<int64_t>(header->total_length) + body != size) {
    report.Fail(s.name, "data.npy",
                "header " + std::to_string(header->total_length) + " + data " +
                    std::to_string(body) + " != FileSize " + std::to_string(size));
    return;
  }
  report.Equal(npy.data() + header->total_length, npy.size() - header->total_length,
               s.ref->full().data(), s.ref->full().size(), s.name, "data.npy",
               static_cast<int64_t>(header->total_length));
  s.npy = npy;
  CheckFile(s, f, npy, rng, 12, report);
}

}  // namespace

void CheckContainer(Subject& s, const ManifestEntry& e, Report& report, std::mt19937_64& rng) {
  const Reference& ref = *s.ref;
  const Container& c = *s.container;
  if (!c.ok()) {
    report.Fail(s.name, "(open)", "container does not decode: " + c.error());
    return;
  }
  if (c.format_name() != e.Format()) {
    report.Fail(s.name, "(open)", "format_name " + c.format_name() + ", expected " + e.Format());
  }
  if (c.layout().shape() != ref.shape() || c.layout().itemsize() != ref.itemsize()) {
    report.Fail(s.name, "(layout)",
                "shape/itemsize differ from the reference: shape " +
                    BoxString(FullBox(c.layout().shape())) + " vs " +
                    BoxString(FullBox(ref.shape())));
    return;
  }
  CheckMeta(s, e, report);

  const VirtualFile data{FileKind::kData};
  (void)CheckStreams(s, data, FullBox(ref.shape()), report);
  CheckFile(s, data, ref.full(), rng, 16, report);
  CheckNpy(s, report, rng);

  // Random boxes, an empty one and the full one.
  std::vector<IBox> boxes = {FullBox(ref.shape())};
  if (ref.ndim() > 0) {
    IBox empty = FullBox(ref.shape());
    empty.start[0] = empty.stop[0] = ref.shape()[0] / 2;
    boxes.push_back(empty);
    for (int i = 0; i < kRandomBoxes; ++i) boxes.push_back(RandomBox(ref.shape(), rng));
  }
  for (const IBox& box : boxes) CheckBox(s, box, ref.Slice(box), report);
  if (ref.ndim() == 0) return;

  // Every chunk: as a box and as a file.
  const int64_t nchunks = c.layout().NumChunks();
  if (nchunks != static_cast<int64_t>(ref.chunk_boxes().size())) {
    report.Fail(
        s.name, "chunks/",
        std::to_string(nchunks) + " chunks, expected " + std::to_string(ref.chunk_boxes().size()));
  } else {
    for (int64_t i = 0; i < nchunks; ++i) {
      const IBox& box = ref.chunk_boxes()[i];
      const VirtualFile f{FileKind::kChunk, 0, i};
      if (!CheckStreams(s, f, box, report)) continue;
      const Bytes want = ref.Slice(box);
      CheckBox(s, box, want, report);
      CheckFile(s, f, want, rng, 2, report);
    }
  }

  // Slices along every axis.
  for (int axis = 0; axis < ref.ndim(); ++axis) {
    const int64_t n = ref.shape()[axis];
    for (int64_t idx :
         SampleIndices(n, n <= kAllSlicesUpTo ? kAllSlicesUpTo : kSampledSlices, rng)) {
      const IBox box = SliceBox(ref.shape(), axis, idx);
      const VirtualFile f{FileKind::kSlice, axis, idx};
      if (!CheckStreams(s, f, box, report)) continue;
      CheckFile(s, f, ref.Slice(box), rng, n <= 64 ? 2 : 0, report);
    }
  }
}

}  // namespace b2ndfs::itest
