// core_compare: reads every fixture container through the b2ndfs core (no
// FUSE) and compares every byte with what c-blosc2 itself reads.
//
//   core_compare set FIXTURE_TOOL      the container set (`b2nd_fixture make`)
//   core_compare hostile FIXTURE_TOOL  the broken set (`b2nd_fixture hostile`)
//
// `set`: for every manifest entry, store::Container vs the reference
// (itest_common's Reference: c-blosc2 decompressing each chunk whole in this
// process, or the .raw bytes of a plain super-chunk): meta.json (valid JSON,
// right shape/itemsize/format), data and data.npy (whole, and at odd offsets
// and lengths, across EOF),
// every chunk (ReadArrayBox of its box and Read of its file), every slice
// along every axis (sampled on long axes), 50 random boxes (empty and full
// ones included). Virtual files are found and read through the views (the
// default views::Registry, looked up by the names the reference gives them),
// as the vfs finds them. Then 8 threads read random ranges of several containers at
// once through a small shared cache and a WorkerPool.
// `hostile`: broken containers never crash, never give wrong bytes; readable
// chunks of partly damaged ones read right, damaged ones fail with EIO.
// Exit status: 0 if all equal, 1 on any mismatch (each named on stderr:
// container, file, offset), 2 on usage or set-up errors.
#include "core_compare.h"

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
#include "itest_common.h"

namespace b2ndfs::itest {
namespace {

// ---------------------------------------------------------------------------
// Many threads, one shared (small) cache, a worker pool.

struct ThreadTarget {
  const Subject* subject;
  VirtualFile file;
  Bytes want;
};

void RunParallel(const std::vector<Subject>& subjects, Report& report, int threads,
                 size_t cache_bytes, const char* label) {
  cache::BlockCache cache(cache_bytes, 4);
  codec::DecompressorPool decompressors(8);
  store::WorkerPool workers(3);
  store::StoreContext ctx;
  ctx.cache = &cache;
  ctx.decompressors = &decompressors;
  ctx.workers = &workers;
  ctx.max_pinned_bytes = 256u << 10;  // forces reads to be split
  source::DescriptorCache descriptors(64);

  // Freshly opened containers sharing the new context.
  std::vector<Subject> fresh;
  for (const Subject& s : subjects) {
    Subject f = s;
    std::string error;
    f.container = OpenContainer(s.path, &descriptors, &ctx, &error);
    if (!f.container || !f.container->ok()) continue;
    fresh.push_back(std::move(f));
  }
  if (fresh.empty()) {
    report.Fail("(parallel)", label, "no container opened");
    return;
  }
  std::vector<ThreadTarget> targets;
  std::mt19937_64 rng(kSeed + 7);
  for (const Subject& s : fresh) {
    const Reference& ref = *s.ref;
    targets.push_back({&s, {FileKind::kData}, ref.full()});
    if (!s.npy.empty()) targets.push_back({&s, {FileKind::kDataNpy}, s.npy});
    for (int64_t i : SampleIndices(static_cast<int64_t>(ref.chunk_boxes().size()), 6, rng)) {
      targets.push_back({&s,
                         {FileKind::kChunk, 0, i},
                         CopyBox(ref.full(), ref.shape(), ref.itemsize(), ref.chunk_boxes()[i])});
    }
    for (int axis = 0; axis < ref.ndim(); ++axis) {
      for (int64_t i : SampleIndices(ref.shape()[axis], 3, rng)) {
        targets.push_back(
            {&s,
             {FileKind::kSlice, axis, i},
             CopyBox(ref.full(), ref.shape(), ref.itemsize(), SliceBox(ref.shape(), axis, i))});
      }
    }
  }
  // Half of all reads go to the first target (one file, many readers).
  std::vector<std::thread> pool;
  std::atomic<uint64_t> bytes{0};
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::mt19937_64 trng(kSeed + 100 + t);
      for (int op = 0; op < 160; ++op) {
        const ThreadTarget& target = op % 2 == 0 ? targets[0] : targets[trng() % targets.size()];
        const int64_t size = static_cast<int64_t>(target.want.size());
        if (size == 0) continue;
        const int64_t offset = static_cast<int64_t>(trng() % static_cast<uint64_t>(size));
        const size_t length = 1 + trng() % (size_t{1} << (trng() % 19));
        CheckRead(*target.subject, target.file, target.want, offset, length, report);
        bytes += length;
      }
    });
  }
  for (auto& th : pool) th.join();
  const cache::CacheStats st = cache.stats();
  std::printf(
      "core.compare: parallel (%s): %d threads, %zu files, %llu bytes asked, "
      "cache "
      "hits %llu misses %llu shared_waits %llu evictions %llu\n",
      label, threads, targets.size(), static_cast<unsigned long long>(bytes.load()),
      static_cast<unsigned long long>(st.hits), static_cast<unsigned long long>(st.misses),
      static_cast<unsigned long long>(st.shared_waits),
      static_cast<unsigned long long>(st.evictions));
}

// ---------------------------------------------------------------------------

int RunSet(const std::string& fixture_tool) {
  namespace fs = std::filesystem;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string work = MakeTempDir("b2ndfs-core-compare");
  const std::string out = work + "/out";
  const std::string refdir = work + "/ref";
  if (RunCommand({fixture_tool, "make", out, refdir}) != 0) {
    std::fprintf(stderr, "core.compare: %s make failed\n", fixture_tool.c_str());
    return 2;
  }
  const auto entries = ReadManifest(refdir + "/manifest.tsv");

  cache::BlockCache cache(64u << 20);
  codec::DecompressorPool decompressors(4);
  store::WorkerPool workers(2);
  store::StoreContext ctx;
  ctx.cache = &cache;
  ctx.decompressors = &decompressors;
  ctx.workers = &workers;
  source::DescriptorCache descriptors(64);

  Report report;
  std::mt19937_64 rng(kSeed);
  std::vector<std::unique_ptr<Reference>> refs;
  std::vector<Subject> subjects;
  std::vector<Subject> parallel;
  for (const ManifestEntry& e : entries) {
    refs.push_back(Reference::Open(refdir + "/" + e.reference, e.itemsize));
    Subject s;
    s.name = e.rel;
    s.path = out + "/" + e.rel;
    s.ref = refs.back().get();
    std::string error;
    s.container = OpenContainer(s.path, &descriptors, &ctx, &error);
    if (!s.container) {
      report.Fail(s.name, "(open)", "source does not open: " + error);
      continue;
    }
    const uint64_t before = report.failures();
    CheckContainer(s, e, report, rng);
    if (report.failures() == before && s.container->ok()) {
      const bool pick = e.rel.rfind("medium/", 0) == 0 || e.rel == "ndim/3d_f4.b2nd" ||
                        e.rel == "frames/sparse_f4.b2nd" || e.rel == "frames/plain.b2frame" ||
                        e.rel == "legacy/caterva_i2.cat" ||
                        e.rel == "special/partial_zeros_f4.b2nd";
      if (pick) parallel.push_back(s);
    }
  }
  // The busiest file first: RunParallel sends half of all reads to it.
  std::stable_sort(parallel.begin(), parallel.end(), [](const Subject& a, const Subject& b) {
    return a.ref->nbytes() > b.ref->nbytes();
  });
  if (!parallel.empty()) {
    RunParallel(parallel, report, 8, 1u << 20, "1 MiB cache");
    RunParallel(parallel, report, 8, 64u << 20, "64 MiB cache");
  } else {
    report.Fail("(parallel)", "-", "no container passed the sequential checks");
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("core.compare: %zu containers, %llu checks, %llu mismatches, %.1f s\n",
              entries.size(), static_cast<unsigned long long>(report.checks()),
              static_cast<unsigned long long>(report.failures()), seconds);
  if (report.failures() == 0 || std::getenv("B2NDFS_KEEP_TMP") == nullptr) {
    std::error_code ec;
    fs::remove_all(work, ec);
  } else {
    std::printf("core.compare: fixtures kept in %s\n", work.c_str());
  }
  return report.failures() == 0 ? 0 : 1;
}

// ---------------------------------------------------------------------------

// Reads a whole virtual file (a path in the container directory); the
// Result's errno on failure (ENOENT when the views have no such file).
Result<Bytes> ReadAll(const Container& c, const std::string& path) {
  B2NDFS_ASSIGN_OR_RETURN(NodePtr node, Walk(c, path));
  Bytes out(static_cast<size_t>(std::max<int64_t>(0, node->Size(c))));
  auto n = node->Read(c, 0, out.size(), out.data());
  if (!n.ok()) return n.status();
  out.resize(*n);
  return out;
}

int64_t ChunkIndexByName(const Container& c, const std::string& name) {
  Shape coords;
  size_t pos = 0;
  while (pos <= name.size()) {
    const size_t dot = name.find('.', pos);
    coords.push_back(std::stoll(name.substr(pos, dot == std::string::npos ? dot : dot - pos)));
    if (dot == std::string::npos) break;
    pos = dot + 1;
  }
  return c.layout().ChunkIndex(coords);
}

void CheckHostile(const HostileEntry& e, const std::string& dir, const Reference* intact,
                  store::StoreContext* ctx, source::DescriptorCache* descriptors, Report& report) {
  std::string open_error;
  auto c = OpenContainer(dir + "/out/" + e.name, descriptors, ctx, &open_error);
  if (!c) {
    // The source itself does not open (a sparse frame without
    // chunks.b2frame): no container at all, the strongest "undecodable".
    if (open_error.empty()) report.Fail(e.name, "(open)", "source fails without a message");
    if (ExpectationFor(e) == HostileExpectation::kPartial) {
      report.Fail(e.name, "(open)", "should decode (only some chunks are damaged): " + open_error);
    }
    report.Count();
    return;
  }
  std::string error;
  auto json = ParseJson(c->meta_json(), &error);
  if (!json) {
    report.Fail(e.name, "meta.json", "not JSON: " + error + "\n" + c->meta_json());
    return;
  }
  const Json* err = json->Find("error");
  if (!c->ok()) {
    if (err == nullptr || err->type != Json::Type::kString || err->text.empty()) {
      report.Fail(e.name, "meta.json", "undecodable container without an \"error\" string");
    }
    auto data = ReadAll(*c, "data");
    if (data.ok() && !data->empty()) report.Fail(e.name, "data", "readable although broken");
    if (ExpectationFor(e) == HostileExpectation::kPartial) {
      report.Fail(e.name, "(open)", "should decode (only some chunks are damaged): " + c->error());
    }
    report.Count();
    return;
  }
  if (err != nullptr) report.Fail(e.name, "meta.json", "has \"error\" but the container is ok()");
  auto data = ReadAll(*c, "data");
  auto expect_eio = [&](const Result<Bytes>& r, const std::string& file) {
    if (r.ok()) {
      report.Fail(e.name, file, "read succeeded, expected EIO");
    } else if (r.status().error_number() != EIO) {
      report.Fail(
          e.name, file,
          "failed with errno " + std::to_string(r.status().error_number()) + ", expected EIO");
    } else {
      report.Count();
    }
  };
  switch (ExpectationFor(e)) {
    case HostileExpectation::kError:
      report.Fail(e.name, "(open)", "decodes, but it is broken (" + e.description + ")");
      break;
    case HostileExpectation::kErrorOrEio:
      expect_eio(data, "data");
      break;
    case HostileExpectation::kErrorOrSame:
      if (data.ok()) {
        report.Equal(data->data(), data->size(), intact->full().data(), intact->full().size(),
                     e.name, "data", 0);
      } else {
        expect_eio(data, "data");
      }
      break;
    case HostileExpectation::kPartial: {
      expect_eio(data, "data");
      Reference* ref = nullptr;
      std::unique_ptr<Reference> own;
      if (!e.reference.empty()) {
        own = Reference::Open(dir + "/" + e.reference, 0);
        ref = own.get();
      }
      for (int pass = 0; pass < 2; ++pass) {  // errors must not stick, nor vanish
        for (const std::string& name : e.readable_chunks) {
          const int64_t i = ChunkIndexByName(*c, name);
          if (i < 0 || ref == nullptr) {
            report.Fail(e.name, "chunks/" + name, "no such chunk");
            continue;
          }
          auto got = ReadAll(*c, "chunks/" + name);
          if (!got.ok()) {
            report.Fail(e.name, "chunks/" + name, "read failed: " + got.status().message());
            continue;
          }
          const Bytes want = ref->Slice(ref->chunk_boxes()[i]);
          report.Equal(got->data(), got->size(), want.data(), want.size(), e.name, "chunks/" + name,
                       0);
        }
        for (const std::string& name : e.bad_chunks) {
          const int64_t i = ChunkIndexByName(*c, name);
          if (i < 0) {
            report.Fail(e.name, "chunks/" + name, "no such chunk");
            continue;
          }
          expect_eio(ReadAll(*c, "chunks/" + name), "chunks/" + name);
        }
      }
      break;
    }
    case HostileExpectation::kDecodesOrError: {
      Bytes head(4096);
      auto npy = Walk(*c, "data.npy");
      if (!npy.ok()) {
        report.Fail(e.name, "data.npy", "lookup failed: " + npy.status().message());
        break;
      }
      auto n = (*npy)->Read(*c, 0, head.size(), head.data());
      std::string npy_error;
      if (!n.ok()) {
        report.Fail(e.name, "data.npy", "read failed: " + n.status().message());
      } else if (auto h = ParseNpyHeader(head.data(), *n, &npy_error);
                 !h || !CheckNpyDict(h->dict, c->layout().shape(), &npy_error)) {
        report.Fail(e.name, "data.npy", "bad header: " + npy_error);
      }
      break;
    }
  }
  // Whatever the verdict, reading every file must not crash.
  if (c->layout().ndim() > 0) {
    for (int64_t i = 0; i < c->layout().NumChunks(); ++i) {
      (void)ReadAll(*c, "chunks/" + ChunkName(c->layout().ChunkCoords(i)));
    }
    for (int axis = 0; axis < c->layout().ndim(); ++axis) {
      for (int64_t i = 0; i < std::min<int64_t>(c->layout().shape()[axis], 64); ++i) {
        (void)ReadAll(*c, SliceName(c->layout().shape(), axis, i));
      }
    }
  }
}

int RunHostile(const std::string& fixture_tool) {
  namespace fs = std::filesystem;
  const std::string work = MakeTempDir("b2ndfs-core-hostile");
  if (RunCommand({fixture_tool, "hostile", work + "/out"}) != 0) {
    std::fprintf(stderr, "core.hostile: %s hostile failed\n", fixture_tool.c_str());
    return 2;
  }
  const auto entries = ReadHostileManifest(work + "/hostile.tsv");
  auto intact = Reference::Open(work + "/hostile_ref/intact.b2nd", 0);
  cache::BlockCache cache(16u << 20);
  codec::DecompressorPool decompressors(2);
  store::WorkerPool workers(2);
  store::StoreContext ctx;
  ctx.cache = &cache;
  ctx.decompressors = &decompressors;
  ctx.workers = &workers;
  source::DescriptorCache descriptors(64);
  Report report;
  for (const HostileEntry& e : entries)
    CheckHostile(e, work, intact.get(), &ctx, &descriptors, report);
  std::printf("core.hostile: %zu containers, %llu checks, %llu mismatches\n", entries.size(),
              static_cast<unsigned long long>(report.checks()),
              static_cast<unsigned long long>(report.failures()));
  std::error_code ec;
  fs::remove_all(work, ec);
  return report.failures() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace b2ndfs::itest

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: core_compare set|hostile FIXTURE_TOOL\n");
    return 2;
  }
  blosc2_init();
  int rc = 2;
  try {
    const std::string mode = argv[1];
    if (mode == "set") {
      rc = b2ndfs::itest::RunSet(argv[2]);
    } else if (mode == "hostile") {
      rc = b2ndfs::itest::RunHostile(argv[2]);
    } else {
      std::fprintf(stderr, "core_compare: unknown mode %s\n", mode.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "core_compare: %s\n", e.what());
    rc = 2;
  }
  blosc2_destroy();
  return rc;
}
