// The decoder guard (store/block_run.cc): a coalesced read's buffer is
// reused memory, and only the blocks still missing when the read is made are
// fetched into it. A decoder must never see a byte that was not fetched for
// it, whatever the compressed stream claims: here block 0 of a crafted
// chunk says it stores its bytes raw (a stream as long as the block), which
// runs past its own compressed bytes into those of block 1. Another reader
// caches block 1 between the plan and its read, so block 1's bytes are not
// fetched, and the buffer there holds what an earlier buffer of another
// container left (a poison pattern here). The read must fail (EIO), never
// return the poison.
#include <b2nd.h>
#include <blosc2.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "b2nd_writer.h"
#include "b2ndfs/cache/block_cache.h"
#include "b2ndfs/source/byte_source.h"
#include "b2ndfs/store/container.h"
#include "temp_dir.h"
#include "test_store.h"

namespace b2ndfs {
namespace {

constexpr int32_t kBlockBytes = 16 << 10;
constexpr uint8_t kPoison = 0xA5;

// A local source that calls `on_read` (once, when set) before a read.
class HookSource final : public source::ByteSource {
 public:
  explicit HookSource(std::shared_ptr<const source::ByteSource> inner) : inner_(std::move(inner)) {}
  const std::string& name() const override { return inner_->name(); }
  bool sparse() const override { return inner_->sparse(); }
  const source::Signature& signature() const override { return inner_->signature(); }
  Result<int64_t> PartSize(int64_t part) const override { return inner_->PartSize(part); }
  Status Read(int64_t part, int64_t offset, size_t length, uint8_t* out) const override {
    if (on_read) {
      auto hook = std::move(on_read);
      on_read = nullptr;
      hook();
    }
    return inner_->Read(part, offset, length, out);
  }
  source::CostProfile cost() const override { return inner_->cost(); }
  bool found_stale() const override { return inner_->found_stale(); }
  mutable std::function<void()> on_read;

 private:
  std::shared_ptr<const source::ByteSource> inner_;
};

int32_t Le32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// A 1-D uint8 array of one chunk of two blocks: block 0 compresses well,
// block 1 (random) is stored raw. Then block 0's stream is made to claim
// the block's length: c-blosc2 copies that many bytes from its start.
void WriteCraftedArray(const std::string& path) {
  blosc2_cparams cp = BLOSC2_CPARAMS_DEFAULTS;
  cp.typesize = 1;
  cp.nthreads = 1;
  cp.compcode = BLOSC_LZ4;
  cp.clevel = 5;
  for (uint8_t& f : cp.filters) f = BLOSC_NOFILTER;
  const int64_t shape[1] = {2 * kBlockBytes};
  const int32_t chunks[1] = {2 * kBlockBytes};
  const int32_t blocks[1] = {kBlockBytes};
  std::vector<uint8_t> data(2 * kBlockBytes);
  std::mt19937 rng(3);
  for (int32_t i = 0; i < kBlockBytes; ++i) data[i] = static_cast<uint8_t>(i % 7);
  for (int32_t i = kBlockBytes; i < 2 * kBlockBytes; ++i) data[i] = static_cast<uint8_t>(rng());
  b2nd_array_t* array = testing::WriteContiguous(path, cp, 1, shape, chunks, blocks, "|u1",
                                                 data.data(), static_cast<int64_t>(data.size()));
  uint8_t* chunk = nullptr;
  bool needs_free = false;
  const int cbytes = blosc2_schunk_get_chunk(array->sc, 0, &chunk, &needs_free);
  REQUIRE(cbytes > 0);
  std::vector<uint8_t> original(chunk, chunk + cbytes);
  if (needs_free) free(chunk);
  b2nd_free(array);

  const int32_t start0 = Le32(original.data() + BLOSC_EXTENDED_HEADER_LENGTH);
  const int32_t start1 = Le32(original.data() + BLOSC_EXTENDED_HEADER_LENGTH + 4);
  REQUIRE(start0 < start1);
  REQUIRE(start1 - start0 < kBlockBytes / 2);              // block 0 compressed
  REQUIRE(Le32(original.data() + start1) == kBlockBytes);  // block 1 raw
  REQUIRE(start0 + 4 + kBlockBytes <= cbytes);             // the claim fits the chunk

  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  auto at = std::search(file.begin(), file.end(), original.begin(), original.end());
  REQUIRE(at != file.end());
  const int32_t claim = kBlockBytes;
  std::memcpy(&*at + start0, &claim, 4);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
}

// Leaves freed slab slots of every size a read of the chunk may take full
// of kPoison (buffer_memory.h hands the newest freed slot out first).
void PoisonBufferMemory() {
  std::vector<cache::Bytes> buffers;
  for (size_t size = 8 << 10; size <= (64 << 10); size += 512) {
    buffers.emplace_back(size);
    std::fill(buffers.back().begin(), buffers.back().end(), kPoison);
  }
}

}  // namespace

TEST_CASE("a decoder never sees bytes that were not fetched for it", "[read_plan]") {
  testing::TempDir dir("b2ndfs_decoder_guard");
  const std::string path = (dir.path / "crafted.b2nd").string();
  WriteCraftedArray(path);
  testing::TestStore env(64u << 20, 1, 0);
  auto opened = source::OpenLocal(path, &env.descriptors);
  REQUIRE(opened.ok());
  auto hooked = std::make_shared<HookSource>(std::move(opened).value());
  constexpr uint64_t kCacheId = 7;
  auto container = store::Container::Open(hooked, &env.ctx, kCacheId, nullptr);
  REQUIRE(container->ok());

  // The read plans both blocks (neither is cached), then reads chunk 0's
  // head: there another reader's block 1 lands in the cache, so the plan's
  // read fetches block 0's bytes only.
  hooked->on_read = [&] {
    auto block = std::make_shared<cache::Bytes>(kBlockBytes);
    std::fill(block->begin(), block->end(), uint8_t{0});
    env.cache.Insert(cache::Key{kCacheId, 0, 1, cache::EntryKind::kBlock},
                     cache::Value(std::move(block)));
    PoisonBufferMemory();
  };
  PoisonBufferMemory();
  std::vector<uint8_t> got(2 * kBlockBytes, 0);
  const Status read =
      container->ReadArrayBox(geometry::Box::FromShape({2 * kBlockBytes}), got.data());
  CHECK(hooked->on_read == nullptr);  // the hook ran
  const auto poisoned = std::count(got.begin(), got.begin() + kBlockBytes, kPoison);
  CAPTURE(read.message(), poisoned);
  CHECK_FALSE(read.ok());
  CHECK(read.error_number() == EIO);
  CHECK(poisoned == 0);
}

}  // namespace b2ndfs
