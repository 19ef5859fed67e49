// One memory budget for the stores (stores/store_tree.h, embed_frame.h):
// a store's index and its embed frame's decompressed units live in the block
// cache, loaded once however many callers ask at the same time, charged in
// its budget and evicted like blocks; an index too large to keep is a cached
// verdict, not parsed again while the store's version stays. Also the
// cache's typed objects (block_cache.h) and the one cache-id allocator
// (cache_id.h) they are keyed by.
#include <blosc2.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/cache/cache_id.h"
#include "b2ndfs/stores/embed_frame.h"
#include "b2ndfs/stores/store_tree.h"
#include "b2ndfs/util/log.h"
#include "fake_tree.h"
#include "index_budget.h"
#include "test_store.h"
#include "zip_test_archive.h"

namespace b2ndfs {
namespace {

using testing::Bytes;
using testing::FakeTree;

// A frame (a super-chunk of 1-byte items, as EmbedStore writes its stream)
// holding `stream`, in chunks of `chunksize` and blocks of `blocksize`,
// with an empty "estore_metadata" map (so EmbedFrame::Open takes it).
std::string EmbedFrameBytes(const std::vector<uint8_t>& stream, int32_t chunksize,
                            int32_t blocksize) {
  static const bool initialized = [] {
    blosc2_init();
    return true;
  }();
  (void)initialized;
  blosc2_cparams cparams = BLOSC2_CPARAMS_DEFAULTS;
  cparams.typesize = 1;
  cparams.nthreads = 1;
  cparams.blocksize = blocksize;
  blosc2_dparams dparams = BLOSC2_DPARAMS_DEFAULTS;
  blosc2_storage storage = {.contiguous = true, .cparams = &cparams, .dparams = &dparams};
  blosc2_schunk* s = blosc2_schunk_new(&storage);
  REQUIRE(s != nullptr);
  for (size_t at = 0; at < stream.size(); at += static_cast<size_t>(chunksize)) {
    const size_t n = std::min(stream.size() - at, static_cast<size_t>(chunksize));
    REQUIRE(blosc2_schunk_append_buffer(s, stream.data() + at, static_cast<int32_t>(n)) >= 0);
  }
  // {"embed_map": {}}
  uint8_t empty_map[] = {0x81, 0xa9, 'e', 'm', 'b', 'e', 'd', '_', 'm', 'a', 'p', 0x80};
  REQUIRE(blosc2_vlmeta_add(s, "estore_metadata", empty_map, sizeof(empty_map), nullptr) >= 0);
  uint8_t* cframe = nullptr;
  bool needs_free = false;
  const int64_t len = blosc2_schunk_to_buffer(s, &cframe, &needs_free);
  REQUIRE(len > 0);
  std::string out(reinterpret_cast<char*>(cframe), static_cast<size_t>(len));
  if (needs_free) free(cframe);
  blosc2_schunk_free(s);
  return out;
}

// Bytes that compress a little and differ at every offset that matters.
std::vector<uint8_t> Pattern(size_t n) {
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>((i / 7) ^ (i >> 13));
  return out;
}

stores::FrameReadAt ReaderOf(const std::string& frame) {
  return [&frame](int64_t at, int64_t n) -> Result<std::vector<uint8_t>> {
    if (at < 0 || n < 0 || at > static_cast<int64_t>(frame.size()) ||
        n > static_cast<int64_t>(frame.size()) - at) {
      return Status(EIO, "past the end");
    }
    return std::vector<uint8_t>(frame.begin() + at, frame.begin() + at + n);
  };
}

uint64_t UnitsDecompressed() { return stores::GlobalEmbedStats().units_decompressed.load(); }
uint64_t IndexesParsed() { return stores::internal::GlobalStoreIndexStats().parsed.load(); }

// An empty EmbedStore frame tagged as a TreeStore's.
std::string EmptyEmbedStore() { return EmbedFrameBytes({}, 1 << 20, 0); }

// A .b2z whose members are `n` empty leaves named by `width` characters.
Bytes ManyLeaves(size_t n, size_t width) {
  std::vector<testing::TestMember> members;
  members.reserve(n + 1);
  for (size_t i = 0; i < n; ++i) {
    std::string name = std::to_string(i);
    name = std::string(width - name.size(), 'k') + name + ".b2nd";
    members.push_back({name, ""});
  }
  members.push_back({"embed.b2e", EmptyEmbedStore()});
  return testing::MakeTestArchive(members, n >= 65535).bytes;
}

std::string ReadText(const source::Tree& tree, const std::string& path) {
  auto file = tree.OpenFile(path);
  REQUIRE(file.ok());
  std::string text(1 << 16, '\0');
  auto n = (*file)->ReadUpTo(0, reinterpret_cast<uint8_t*>(text.data()), text.size());
  REQUIRE(n.ok());
  text.resize(*n);
  return text;
}

}  // namespace

TEST_CASE("cache ids come from one allocator; named keys depend on their name only",
          "[stores][cache]") {
  std::set<uint64_t> ids;
  for (int i = 0; i < 1000; ++i) ids.insert(cache::NewCacheId());
  CHECK(ids.size() == 1000);
  CHECK(*ids.rbegin() < (uint64_t{1} << 63));
  const cache::Key a = cache::NamedKey(cache::EntryKind::kEmbedChunk, "store|1:2:3", 5);
  CHECK(a == cache::NamedKey(cache::EntryKind::kEmbedChunk, "store|1:2:3", 5));
  CHECK_FALSE(a == cache::NamedKey(cache::EntryKind::kEmbedChunk, "store|1:2:4", 5));
  CHECK_FALSE(a == cache::NamedKey(cache::EntryKind::kEmbedChunk, "store|1:2:3", 6));
  CHECK((a.container_id >> 63) == 1);  // never an allocated id
}

TEST_CASE("typed objects load once, are charged what they declare and are evicted",
          "[stores][cache]") {
  cache::BlockCache cache(10000, 1);
  std::atomic<int> loads{0};
  auto loader = [&loads]() -> Result<cache::BlockCache::LoadedObject> {
    loads++;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return cache::BlockCache::LoadedObject{std::make_shared<const std::string>("index"), 4000};
  };
  const cache::Key key = cache::NamedKey(cache::EntryKind::kObject, "a");
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      auto got = cache.GetOrLoadObjectAs<std::string>(key, loader);
      REQUIRE(got.ok());
      CHECK(**got == "index");
    });
  }
  for (auto& t : threads) t.join();
  CHECK(loads == 1);
  CHECK(cache.stats().bytes_cached == cache::BlockCache::ChargeFor(4000));
  CHECK(cache.TryGetObject(key) != nullptr);
  // Two more of 4000 bytes: the first is evicted to fit 10000.
  for (const char* name : {"b", "c"}) {
    REQUIRE(cache.GetOrLoadObject(cache::NamedKey(cache::EntryKind::kObject, name), loader).ok());
  }
  CHECK(cache.TryGetObject(key) == nullptr);
  CHECK(cache.stats().bytes_cached <= 10000);
  CHECK(cache.stats().evictions == 1);
}

TEST_CASE("embed units are decompressed once and then served from the block cache", "[stores]") {
  // Two chunks of 8 MiB (blocks of 256 KiB) and a short third: units of
  // kEmbedUnitBytes, each decoded from only the blocks it covers.
  const std::vector<uint8_t> stream = Pattern((size_t{16} << 20) + 12345);
  const std::string frame_bytes = EmbedFrameBytes(stream, 8 << 20, 256 << 10);
  const stores::FrameReadAt read = ReaderOf(frame_bytes);
  cache::BlockCache cache(64 << 20, 1);
  auto frame = stores::EmbedFrame::Open(read, static_cast<int64_t>(frame_bytes.size()),
                                        {&cache, "test|embed-a"});
  INFO((frame.ok() ? "" : frame.status().message()));
  REQUIRE(frame.ok());
  REQUIRE((*frame)->stream_size() == static_cast<int64_t>(stream.size()));
  auto read_at = [&](int64_t offset, size_t n) {
    std::vector<uint8_t> out(n);
    REQUIRE((*frame)->ReadStream(read, offset, n, out.data()).ok());
    CHECK(std::equal(out.begin(), out.end(), stream.begin() + offset));
  };
  const uint64_t before = UnitsDecompressed();
  read_at(100, 10);
  CHECK(UnitsDecompressed() - before == 1);
  read_at(5000, 64);  // the same unit: nothing decompressed
  read_at(100, 10);
  CHECK(UnitsDecompressed() - before == 1);
  // A read across a unit edge and one across the chunk edge.
  read_at(stores::kEmbedUnitBytes - 3, 10);
  CHECK(UnitsDecompressed() - before == 2);
  read_at((8 << 20) - 5, 20);  // chunk 0's second unit is kept already
  CHECK(UnitsDecompressed() - before == 3);
  read_at(static_cast<int64_t>(stream.size()) - 100, 100);
  CHECK(UnitsDecompressed() - before == 4);
  CHECK(cache.stats().bytes_cached >= 3 * static_cast<size_t>(stores::kEmbedUnitBytes));

  SECTION("without a cache every read decodes its unit again") {
    auto bare = stores::EmbedFrame::Open(read, static_cast<int64_t>(frame_bytes.size()));
    REQUIRE(bare.ok());
    std::vector<uint8_t> out(10);
    const uint64_t start = UnitsDecompressed();
    REQUIRE((*bare)->ReadStream(read, 100, 10, out.data()).ok());
    REQUIRE((*bare)->ReadStream(read, 100, 10, out.data()).ok());
    CHECK(UnitsDecompressed() - start == 2);
  }
  SECTION("a small cache evicts units and stays within its budget") {
    cache::BlockCache small(10 << 20, 1);  // two units
    auto f = stores::EmbedFrame::Open(read, static_cast<int64_t>(frame_bytes.size()),
                                      {&small, "test|embed-b"});
    REQUIRE(f.ok());
    std::vector<uint8_t> out(10);
    const uint64_t start = UnitsDecompressed();
    for (int64_t at : {int64_t{0}, int64_t{4} << 20, int64_t{8} << 20, int64_t{12} << 20}) {
      REQUIRE((*f)->ReadStream(read, at, 10, out.data()).ok());
      CHECK(small.stats().bytes_cached <= small.capacity_bytes());
    }
    CHECK(small.stats().evictions >= 2);
    REQUIRE((*f)->ReadStream(read, 0, 10, out.data()).ok());  // evicted: decoded again
    CHECK(UnitsDecompressed() - start == 5);
  }
}

TEST_CASE("a store's index is parsed once across concurrent stats, lookups and opens", "[stores]") {
  SetLogLevel(LogLevel::kError);
  auto fake = std::make_shared<FakeTree>();
  fake->PutFile("s.b2z", ManyLeaves(200, 12));
  testing::TestStore store(64 << 20, 4, 0);
  auto tree = stores::MakeStoreTree(fake, &store.ctx);
  fake->SetDelay(std::chrono::milliseconds(2));  // parses overlap unless shared
  const std::string root = std::string(FakeTree::kRoot) + "/s.b2z";
  const uint64_t before = IndexesParsed();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        const std::string leaf = root + "/kkkkkkkkk" + std::to_string(100 + (t * 10 + i) % 100);
        bool ok = true;
        switch ((t + i) % 4) {
          case 0:
            ok = tree->Stat(leaf).ok();
            break;
          case 1:
            ok = tree->List(root).ok();
            break;
          case 2:
            ok = tree->OpenContainer(leaf, nullptr).ok();
            break;
          default:
            ok = tree->Stat(root + "/meta.json").ok();
        }
        if (!ok) failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures == 0);
  CHECK(IndexesParsed() - before == 1);
  // Charged in the mount's cache.
  CHECK(store.cache.stats().bytes_cached > 200 * 100);
  // A new version is parsed again, once.
  fake->SetDelay(std::chrono::milliseconds(0));
  fake->PutFile("s.b2z", ManyLeaves(201, 12));
  REQUIRE(tree->Stat(root + "/kkkkkkkkk200").ok());
  REQUIRE(tree->Stat(root + "/kkkkkkkkk199").ok());
  CHECK(IndexesParsed() - before == 2);
}

TEST_CASE("an index too large to keep is a cached verdict, not parsed again", "[stores]") {
  SetLogLevel(LogLevel::kError);
  auto fake = std::make_shared<FakeTree>();
  // 70,000 members with names of 200 characters: an index of more than
  // kMaxIndexBytes (a central directory of 17 MB, within the archive bounds).
  fake->PutFile("big.b2z", ManyLeaves(70000, 200));
  testing::TestStore store(64 << 20, 1, 0);
  auto tree = stores::MakeStoreTree(fake, &store.ctx);
  const std::string root = std::string(FakeTree::kRoot) + "/big.b2z";
  const uint64_t parsed = IndexesParsed();
  const uint64_t oversize = stores::internal::GlobalStoreIndexStats().oversize.load();
  for (int i = 0; i < 20; ++i) {
    auto st = tree->Stat(root);
    REQUIRE(st.ok());
    auto listing = tree->List(root);
    REQUIRE(listing.ok());
    REQUIRE(listing->size() == 1);
    CHECK(listing->front().name == "meta.json");
    CHECK_FALSE(tree->Stat(root + "/" + std::string(195, 'k') + "12345").ok());
  }
  CHECK(IndexesParsed() - parsed == 1);
  CHECK(stores::internal::GlobalStoreIndexStats().oversize.load() - oversize == 1);
  const std::string meta = ReadText(*tree, root + "/meta.json");
  INFO(meta);
  CHECK(meta.find("\"error\"") != std::string::npos);
  CHECK(meta.find("more than the") != std::string::npos);
  // The verdict is small: it does not take the cache; what the parse held
  // was charged only while it ran.
  CHECK(store.cache.stats().bytes_cached < 64 * 1024);
  CHECK(store.cache.stats().external_bytes == 0);
}

TEST_CASE("store indexes are evicted from a small cache and parsed again when asked", "[stores]") {
  SetLogLevel(LogLevel::kError);
  auto fake = std::make_shared<FakeTree>();
  for (int i = 0; i < 30; ++i) fake->PutFile("s" + std::to_string(i) + ".b2z", ManyLeaves(50, 20));
  testing::TestStore store(256 << 10, 1, 0);
  auto tree = stores::MakeStoreTree(fake, &store.ctx);
  const uint64_t before = IndexesParsed();
  for (int i = 0; i < 30; ++i) {
    REQUIRE(tree->List(std::string(FakeTree::kRoot) + "/s" + std::to_string(i) + ".b2z").ok());
    CHECK(store.cache.stats().bytes_cached <= store.cache.capacity_bytes());
  }
  CHECK(IndexesParsed() - before == 30);
  CHECK(store.cache.stats().evictions > 0);
  REQUIRE(tree->List(std::string(FakeTree::kRoot) + "/s0.b2z").ok());  // evicted long ago
  CHECK(IndexesParsed() - before == 31);
  REQUIRE(tree->List(std::string(FakeTree::kRoot) + "/s29.b2z").ok());  // still kept
  CHECK(IndexesParsed() - before == 31);
}

}  // namespace b2ndfs
