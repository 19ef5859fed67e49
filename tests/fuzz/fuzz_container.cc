// fuzz_container: a whole container, as the daemon opens it.
//
// The input is written to a memfd (opened as /proc/self/fd/N, a contiguous
// frame) or, when it is a sparse pack (fuzz_common.h), unpacked into a
// sparse-frame directory; then it is opened as a local source and
// store::Container::Open() decodes it with the same services a mount uses (a
// descriptor cache, a small block cache, a decompressor pool, two workers, a
// pin budget, the default views) and meta.json is checked to be valid JSON.
// When the container decodes, reads follow, of virtual files looked up in the
// views: the first and last 4 KiB of every kind of virtual file (data,
// data.npy, first/middle/last chunk, first/middle/last slice of several
// axes), reads across and at EOF, a few boxes, a read-ahead.
// Checks: sizes agree with the layout, a read returns exactly what fits,
// never writes past it, fails only with EIO/ENOMEM (README.md, "Errors"),
// returns the same bytes when repeated (the second time from the cache), and
// data, data.npy, slice 0, chunk 0 and ReadArrayBox agree on the first row.
// Reads are skipped (decoding never is) when the array is large enough to
// make the fuzzer spend its time decompressing (data > 64 MiB, all stored
// chunks > 256 MiB or a block > 16 MiB).
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/format/frame.h"
#include "b2ndfs/geometry/geometry.h"
#include "b2ndfs/source/byte_source.h"
#include "b2ndfs/source/descriptor_cache.h"
#include "b2ndfs/store/container.h"
#include "b2ndfs/store/pin_budget.h"
#include "b2ndfs/store/worker_pool.h"
#include "b2ndfs/util/checked_math.h"
#include "b2ndfs/views/view.h"
#include "fuzz_common.h"

namespace b2ndfs::fuzz {
namespace {

using geometry::Box;
using store::Container;
using NodePtr = std::shared_ptr<const views::Node>;

// A virtual file as the checks describe it; Find() looks it up in the views.
enum class FileKind { kMetaJson, kData, kDataNpy, kChunk, kSlice };
struct VirtualFile {
  FileKind kind = FileKind::kData;
  int axis = 0;       // kSlice
  int64_t index = 0;  // kChunk: chunk index; kSlice: index along `axis`
};

constexpr int64_t kMaxDataBytes = int64_t{64} << 20;
constexpr int64_t kMaxStoredBytes = int64_t{256} << 20;
constexpr int64_t kMaxBlockBytes = int64_t{16} << 20;
constexpr int64_t kEdgeBytes = 4096;
constexpr int64_t kMaxBoxBytes = int64_t{1} << 20;
constexpr size_t kMaxSparseRecords = 64;

// The services of one mount, shared by every input (as a daemon shares them
// between containers).
struct Services {
  source::DescriptorCache descriptors{16};
  std::shared_ptr<const views::Registry> views = views::Registry::Default();
  std::atomic<uint64_t> next_cache_id{1};
  cache::BlockCache cache{size_t{8} << 20, 4};
  codec::DecompressorPool decompressors{4};
  store::WorkerPool workers{2};
  store::PinBudget pins{size_t{16} << 20};
  store::StoreContext context;
  std::string sparse_dir;  // per process, for sparse packs

  Services() {
    context.cache = &cache;
    context.decompressors = &decompressors;
    context.workers = &workers;
    context.pins = &pins;
    context.max_pinned_bytes = size_t{4} << 20;
  }
};

void RemoveTree(const std::string& dir) {
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") ::unlink((dir + "/" + name).c_str());
    }
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
}

// Removes the sparse-frame directories of fuzzing processes that died
// without their atexit handler (a crash is what fuzzing is after).
void RemoveStaleDirectories(const std::string& base) {
  DIR* d = ::opendir(base.c_str());
  if (d == nullptr) return;
  constexpr std::string_view kPrefix = "b2ndfs-fuzz-";
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(kPrefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + kPrefix.size(), nullptr, 10);
    if (pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    RemoveTree(base + "/" + name + "/x.b2nd");
    ::rmdir((base + "/" + name).c_str());
  }
  ::closedir(d);
}

Services& GetServices() {
  static Services* services = [] {
    auto* s = new Services();
    const char* tmpdir = std::getenv("TMPDIR");
    const std::string base = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                             : tmpdir != nullptr             ? tmpdir
                                                             : "/tmp";
    RemoveStaleDirectories(base);
    static const std::string top = base + "/b2ndfs-fuzz-" + std::to_string(::getpid());
    if (::mkdir(top.c_str(), 0700) == 0 || errno == EEXIST) {
      s->sparse_dir = top + "/x.b2nd";
      std::atexit([] {
        RemoveTree(top + "/x.b2nd");
        ::rmdir(top.c_str());
      });
    }
    return s;
  }();
  return *services;
}

bool WriteAll(int fd, std::span<const uint8_t> bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool WriteFile(const std::string& path, std::span<const uint8_t> bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const bool ok = WriteAll(fd, bytes);
  ::close(fd);
  return ok;
}

std::string KindName(const VirtualFile& f) {
  switch (f.kind) {
    case FileKind::kMetaJson:
      return "meta.json";
    case FileKind::kData:
      return "data";
    case FileKind::kDataNpy:
      return "data.npy";
    case FileKind::kChunk:
      return "chunk " + std::to_string(f.index);
    case FileKind::kSlice:
      return "slice " + std::to_string(f.axis) + "/" + std::to_string(f.index);
  }
  return "?";
}

// The node of `f` in the views: chunks named by their grid coordinates,
// slice indices unpadded (the views accept any padding).
Result<NodePtr> Find(const Container& c, const VirtualFile& f) {
  const NodePtr root = GetServices().views->Root();
  switch (f.kind) {
    case FileKind::kMetaJson:
      return root->Lookup(c, "meta.json");
    case FileKind::kData:
      return root->Lookup(c, "data");
    case FileKind::kDataNpy:
      return root->Lookup(c, "data.npy");
    case FileKind::kChunk: {
      B2NDFS_ASSIGN_OR_RETURN(const NodePtr dir, root->Lookup(c, "chunks"));
      std::string name;
      for (int64_t coord : c.layout().ChunkCoords(f.index)) {
        if (!name.empty()) name += '.';
        name += std::to_string(coord);
      }
      return dir->Lookup(c, name);
    }
    case FileKind::kSlice: {
      B2NDFS_ASSIGN_OR_RETURN(const NodePtr dir, root->Lookup(c, "slices"));
      B2NDFS_ASSIGN_OR_RETURN(const NodePtr axis, dir->Lookup(c, std::to_string(f.axis)));
      return axis->Lookup(c, std::to_string(f.index));
    }
  }
  return NotFound("?");
}

// The node of a file that must exist.
NodePtr MustFind(const Container& c, const VirtualFile& f) {
  auto node = Find(c, f);
  FUZZ_CHECK(node.ok(), KindName(f) + " not found: " + node.status().message());
  FUZZ_CHECK(!(*node)->IsDirectory(), KindName(f) + " is a directory");
  return *node;
}

// Reads of virtual files fail with EIO (ENOMEM when memory runs out), as
// the FUSE layer passes them on.
void CheckError(const Status& status, const std::string& what) {
  const int e = status.error_number();
  FUZZ_CHECK(e == EIO || e == ENOMEM,
             what + " failed with errno " + std::to_string(e) + ": " + status.message());
}

// Reads [offset, offset + length) of `f` twice; returns the bytes if the
// first read worked.
std::optional<std::vector<uint8_t>> CheckedRead(const Container& c, const VirtualFile& f,
                                                int64_t offset, int64_t length) {
  const NodePtr node = MustFind(c, f);
  const int64_t size = node->Size(c);
  const std::string what = KindName(f) + " read of " + std::to_string(length) + " at " +
                           std::to_string(offset) + " (size " + std::to_string(size) + ")";
  constexpr uint8_t kGuard = 0xA5;
  std::vector<uint8_t> buf(static_cast<size_t>(length) + 1, kGuard);
  auto n = node->Read(c, offset, static_cast<size_t>(length), buf.data());
  if (!n.ok()) {
    CheckError(n.status(), what);
    FUZZ_CHECK(f.kind != FileKind::kMetaJson, "meta.json read failed");
    return std::nullopt;
  }
  const int64_t expect = offset >= size ? 0 : std::min(length, size - offset);
  FUZZ_CHECK(static_cast<int64_t>(*n) == expect, what + " returned " + std::to_string(*n) +
                                                     " bytes, expected " + std::to_string(expect));
  FUZZ_CHECK(buf[*n] == kGuard || *n < static_cast<size_t>(length), what + " wrote past its end");
  buf.resize(*n);
  // Again, now (partly) from the cache: same bytes, or an error.
  std::vector<uint8_t> again(static_cast<size_t>(length) + 1, kGuard);
  auto m = node->Read(c, offset, static_cast<size_t>(length), again.data());
  if (m.ok()) {
    FUZZ_CHECK(*m == *n && std::memcmp(buf.data(), again.data(), *n) == 0,
               what + " returned different bytes the second time");
  } else {
    CheckError(m.status(), what + " (repeated)");
  }
  return buf;
}

// Sizes, then the edges of the file, then reads across and at EOF.
std::optional<std::vector<uint8_t>> CheckFile(const Container& c, const VirtualFile& f,
                                              int64_t expected_size) {
  const int64_t size = MustFind(c, f)->Size(c);
  FUZZ_CHECK(size == expected_size, KindName(f) + " size " + std::to_string(size) + ", expected " +
                                        std::to_string(expected_size));
  auto head = CheckedRead(c, f, 0, std::min(size, kEdgeBytes));
  if (size > kEdgeBytes) (void)CheckedRead(c, f, size - kEdgeBytes, kEdgeBytes);
  if (size > 0) (void)CheckedRead(c, f, size - 1, 2);
  (void)CheckedRead(c, f, size, 16);
  (void)CheckedRead(c, f, size + 12345, 1);
  return head;
}

// The largest decompressed block and the bytes of all stored chunks, or
// nullopt if they overflow.
bool AffordableReads(const geometry::ArrayLayout& layout) {
  const int64_t itemsize = layout.itemsize();
  auto data = CheckedMul(layout.NumItems(), itemsize);
  if (!data || *data > kMaxDataBytes) return false;
  auto block = CheckedProduct(layout.blockshape());
  if (!block || !CheckedMul(*block, itemsize) || *block * itemsize > kMaxBlockBytes) return false;
  if (!layout.regular()) return true;  // chunks hold exactly the data
  std::vector<int64_t> ext(layout.chunkshape().size());
  for (size_t i = 0; i < ext.size(); ++i) {
    ext[i] = CeilDiv(layout.chunkshape()[i], layout.blockshape()[i]) * layout.blockshape()[i];
  }
  auto chunk = CheckedProduct(ext);
  if (!chunk) return false;
  auto stored = CheckedMul(*chunk, itemsize);
  if (stored) stored = CheckedMul(*stored, layout.NumChunks());
  return stored && *stored <= kMaxStoredBytes;
}

// Bytes of a box, or nullopt when that overflows or passes kMaxBoxBytes.
std::optional<int64_t> BoxBytes(const Box& box, int64_t itemsize) {
  auto items = CheckedProduct(box.shape());
  if (!items) return std::nullopt;
  auto bytes = CheckedMul(*items, itemsize);
  if (!bytes || *bytes > kMaxBoxBytes) return std::nullopt;
  return bytes;
}

void CheckBoxes(const Container& c, InputRng& rng) {
  const auto& layout = c.layout();
  const auto& shape = layout.shape();
  const int ndim = layout.ndim();
  const int64_t itemsize = layout.itemsize();
  const int64_t cap = ndim <= 3 ? 24 : ndim <= 8 ? 3 : 1;
  for (int k = 0; k < 4; ++k) {
    Box box;
    for (int a = 0; a < ndim; ++a) {
      const int64_t start = rng.Below(shape[a] + 1);
      const int64_t stop = start + rng.Below(std::min(shape[a] - start, cap) + 1);
      box.start.push_back(start);
      box.stop.push_back(stop);
    }
    auto bytes = BoxBytes(box, itemsize);
    if (!bytes) continue;
    std::vector<uint8_t> out(static_cast<size_t>(*bytes));
    Status s = c.ReadArrayBox(box, out.data());
    FUZZ_CHECK(s.ok() || s.error_number() != EINVAL,
               "ReadArrayBox refused " + geometry::ToString(box));
  }
  if (ndim > 0) {
    // Outside the array: refused, not read.
    Box outside = Box::FromShape(shape);
    outside.start[0] = shape[0];
    outside.stop[0] = shape[0] + 1;
    for (int a = 1; a < ndim; ++a) outside.stop[a] = std::min<int64_t>(shape[a], 1);
    if (auto bytes = BoxBytes(outside, itemsize)) {
      std::vector<uint8_t> out(static_cast<size_t>(*bytes));
      Status s = c.ReadArrayBox(outside, out.data());
      FUZZ_CHECK(s.error_number() == EINVAL, "a box outside the array was not refused");
    }
  }
}

// The first row ([0, .., 0, 0:n]) read five ways must agree.
void CheckFirstRow(const Container& c, const std::optional<std::vector<uint8_t>>& data_head,
                   const std::optional<std::vector<uint8_t>>& npy_head,
                   const std::optional<std::vector<uint8_t>>& slice_head,
                   const std::optional<std::vector<uint8_t>>& chunk_head, int64_t npy_header) {
  const auto& layout = c.layout();
  const int ndim = layout.ndim();
  if (ndim == 0 || layout.NumItems() == 0) return;
  const int64_t itemsize = layout.itemsize();
  int64_t n = std::min<int64_t>(layout.shape()[ndim - 1], kEdgeBytes / itemsize);
  if (n <= 0) return;
  Box row = Box::FromShape(layout.shape());
  for (int a = 0; a + 1 < ndim; ++a) row.stop[a] = 1;
  row.stop[ndim - 1] = n;
  std::vector<uint8_t> want(static_cast<size_t>(n * itemsize));
  Status s = c.ReadArrayBox(row, want.data());
  // A damaged or missing chunk (EIO, or ENOMEM) leaves nothing to compare.
  if (!s.ok()) return;
  auto same = [&](const std::optional<std::vector<uint8_t>>& got, int64_t skip, int64_t count,
                  const char* what) {
    if (!got || static_cast<int64_t>(got->size()) < skip + count * itemsize) return;
    FUZZ_CHECK(std::memcmp(got->data() + skip, want.data(), count * itemsize) == 0,
               std::string("first row of ") + what + " differs from ReadArrayBox");
  };
  same(data_head, 0, n, "data");
  same(npy_head, npy_header, n, "data.npy");
  if (ndim >= 2) same(slice_head, 0, n, "slice 0/0");
  if (layout.regular()) {
    same(chunk_head, 0, std::min(n, layout.chunkshape()[ndim - 1]), "chunk 0");
  } else {
    same(chunk_head, 0, std::min(n, layout.ChunkBox(0).NumItems()), "chunk 0");
  }
}

void Exercise(const Container& c, InputRng& rng) {
  std::string error;
  FUZZ_CHECK(IsValidJson(c.meta_json(), &error), "meta.json is not JSON: " + error);
  const VirtualFile meta{FileKind::kMetaJson};
  (void)CheckFile(c, meta, static_cast<int64_t>(c.meta_json().size()));
  if (!c.ok()) {
    FUZZ_CHECK(!c.error().empty(), "no error message");
    FUZZ_CHECK(c.meta_json().find("\"error\"") != std::string::npos, "meta.json lacks \"error\"");
    // The views offer no data file; a stream of it reads nothing, or EIO.
    auto data = Find(c, VirtualFile{FileKind::kData});
    FUZZ_CHECK(!data.ok() && data.status().error_number() == ENOENT, "broken container with data");
    const store::ArrayStream stream{std::string(), Box{{0}, {1}}};
    FUZZ_CHECK(c.StreamSize(stream) == 0, "broken container with data");
    uint8_t byte;
    auto r = c.Read(stream, 0, 1, &byte);
    FUZZ_CHECK(r.ok() ? *r == 0 : r.status().error_number() == EIO, "data of a broken container");
    return;
  }
  const auto& layout = c.layout();
  const int ndim = layout.ndim();
  const auto& shape = layout.shape();
  const int64_t itemsize = layout.itemsize();
  FUZZ_CHECK(itemsize > 0, "itemsize");
  const int64_t data_size = layout.NumItems() * itemsize;
  const int64_t npy_size = MustFind(c, VirtualFile{FileKind::kDataNpy})->Size(c);
  const int64_t npy_header = npy_size - data_size;
  FUZZ_CHECK(npy_header > 0 && npy_header % 64 == 0,
             "npy header of " + std::to_string(npy_header) + " bytes");
  FUZZ_CHECK(MustFind(c, VirtualFile{FileKind::kData})->Size(c) == data_size, "data size");
  const bool affordable = AffordableReads(layout);
  if (std::getenv("B2NDFS_FUZZ_DEBUG") != nullptr) {
    std::fprintf(stderr, "fuzz_container: %s, %d-D, %lld bytes of data, reads %s\n",
                 c.format_name().c_str(), ndim, static_cast<long long>(data_size),
                 affordable ? "done" : "skipped");
  }
  if (!affordable) return;

  auto data_head = CheckFile(c, VirtualFile{FileKind::kData}, data_size);
  auto npy_head = CheckFile(c, VirtualFile{FileKind::kDataNpy}, npy_size);
  if (npy_head) {
    FUZZ_CHECK(npy_head->size() >= 10 && std::memcmp(npy_head->data(), "\x93NUMPY", 6) == 0,
               "data.npy magic");
  }
  MustFind(c, VirtualFile{FileKind::kData})->ReadAhead(c, 0, int64_t{1} << 20);

  std::optional<std::vector<uint8_t>> chunk_head;
  const int64_t nchunks = layout.NumChunks();
  if (ndim > 0 && nchunks > 0) {  // a 0-d array has no chunks/ (nor slices/)
    for (int64_t i : {int64_t{0}, nchunks / 2, nchunks - 1}) {
      const VirtualFile f{FileKind::kChunk, 0, i};
      auto head = CheckFile(c, f, layout.ChunkBox(i).NumItems() * itemsize);
      if (i == 0) chunk_head = std::move(head);
    }
  }
  std::optional<std::vector<uint8_t>> slice_head;
  for (int a = 0; a < ndim; ++a) {
    if (a >= 4 && a != ndim - 1) continue;
    if (shape[a] == 0) continue;
    for (int64_t i : {int64_t{0}, shape[a] / 2, shape[a] - 1}) {
      const VirtualFile f{FileKind::kSlice, a, i};
      auto head = CheckFile(c, f, data_size / shape[a]);
      if (a == 0 && i == 0) slice_head = std::move(head);
    }
  }
  CheckFirstRow(c, data_head, npy_head, slice_head, chunk_head, npy_header);
  CheckBoxes(c, rng);
  // A read at a random offset of data.
  if (data_size > 0) {
    const int64_t offset = rng.Below(data_size);
    (void)CheckedRead(c, VirtualFile{FileKind::kData}, offset,
                      1 + rng.Below(std::min<int64_t>(data_size - offset, 3 * kEdgeBytes)));
  }
}

// Drops the container and waits until background read-ahead no longer
// holds it, so that each input's work ends with the input.
void Release(std::shared_ptr<const Container> container) {
  std::weak_ptr<const Container> weak = container;
  container.reset();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!weak.expired()) {
    FUZZ_CHECK(std::chrono::steady_clock::now() < deadline, "read-ahead did not finish in 20 s");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void RunContiguous(std::span<const uint8_t> input, InputRng& rng) {
  Services& s = GetServices();
  const int fd = ::memfd_create("x.b2nd", MFD_CLOEXEC);
  FUZZ_CHECK(fd >= 0, "memfd_create failed");
  FUZZ_CHECK(WriteAll(fd, input), "cannot write the memfd");
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  auto opened = source::OpenLocal(path, &s.descriptors);
  FUZZ_CHECK(opened.ok(), "cannot open the memfd: " + opened.status().message());
  auto container =
      Container::Open(std::move(opened).value(), &s.context, s.next_cache_id++, s.views.get());
  Exercise(*container, rng);
  Release(std::move(container));
  s.descriptors.Drop(path);  // fd numbers are reused; the memfd's memory is freed
  ::close(fd);
}

void RunSparse(std::span<const uint8_t> input, InputRng& rng) {
  Services& s = GetServices();
  if (s.sparse_dir.empty()) return;
  RemoveTree(s.sparse_dir);
  FUZZ_CHECK(::mkdir(s.sparse_dir.c_str(), 0755) == 0, "cannot create " + s.sparse_dir);
  const auto records = UnpackSparse(input, kMaxSparseRecords);
  for (size_t i = 0; i < records.size(); ++i) {
    if (!records[i].present) continue;
    const std::string name =
        i == 0 ? "chunks.b2frame" : source::SparseChunkFileName(static_cast<int64_t>(i - 1));
    FUZZ_CHECK(WriteFile(s.sparse_dir + "/" + name, records[i].bytes), "cannot write " + name);
  }
  auto opened = source::OpenLocal(s.sparse_dir, &s.descriptors);
  if (!opened.ok()) {
    // Only a sparse frame without chunks.b2frame has no source to open.
    FUZZ_CHECK(records.empty() || !records[0].present,
               "cannot open the sparse frame: " + opened.status().message());
    return;
  }
  auto container =
      Container::Open(std::move(opened).value(), &s.context, s.next_cache_id++, s.views.get());
  Exercise(*container, rng);
  Release(std::move(container));
  for (size_t i = 0; i < records.size(); ++i) {
    s.descriptors.Drop(
        s.sparse_dir + "/" +
        (i == 0 ? "chunks.b2frame" : source::SparseChunkFileName(static_cast<int64_t>(i - 1))));
  }
}

}  // namespace
}  // namespace b2ndfs::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace b2ndfs::fuzz;  // NOLINT
  const std::span<const uint8_t> input(data, size);
  InputRng rng(input);
  if (IsSparsePack(input)) {
    RunSparse(input, rng);
  } else {
    RunContiguous(input, rng);
  }
  return 0;
}
