// Unit tests of items/ (views/vlen_files.cc) on an ObjectArray written with
// c-blosc2's API as python-blosc2 writes one (objectarray.py: metalayer
// "vlarray", one msgpack item per chunk; tests/fixtures/make_vlen.cc cites
// the lines): the container directory holds items/ and meta.json only, every
// ordinal finds its name again (Registry::NodeAt, with more names than
// kOrdinalScanMax), and items read as stored and as JSON.
#include <blosc2.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "b2ndfs/views/view.h"
#include "temp_dir.h"
#include "test_store.h"

namespace b2ndfs {
namespace {

std::vector<uint8_t> Int32Item(int32_t v) {  // msgpack int32
  return {0xd2, static_cast<uint8_t>(v >> 24), static_cast<uint8_t>(v >> 16),
          static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)};
}

void WriteObjectArray(const std::string& path, int items) {
  blosc2_init();
  blosc2_cparams cp = BLOSC2_CPARAMS_DEFAULTS;
  cp.typesize = 1;
  cp.nthreads = 1;
  blosc2_dparams dp = BLOSC2_DPARAMS_DEFAULTS;
  blosc2_storage st = {true, const_cast<char*>(path.c_str()), &cp, &dp, nullptr};
  blosc2_schunk* sc = blosc2_schunk_new(&st);
  REQUIRE(sc != nullptr);
  // {"version": 1, "serializer": "msgpack"}
  std::vector<uint8_t> tag = {0x82, 0xa7, 'v', 'e', 'r', 's', 'i', 'o', 'n', 0x01,
                              0xaa, 's',  'e', 'r', 'i', 'a', 'l', 'i', 'z', 'e',
                              'r',  0xa7, 'm', 's', 'g', 'p', 'a', 'c', 'k'};
  REQUIRE(blosc2_meta_add(sc, "vlarray", tag.data(), static_cast<int32_t>(tag.size())) >= 0);
  for (int i = 0; i < items; ++i) {
    const std::vector<uint8_t> item = Int32Item(i * 7);
    std::vector<uint8_t> chunk(item.size() + BLOSC2_MAX_OVERHEAD);
    blosc2_context* cctx = blosc2_create_cctx(cp);
    const int n = blosc2_compress_ctx(cctx, item.data(), static_cast<int32_t>(item.size()),
                                      chunk.data(), static_cast<int32_t>(chunk.size()));
    blosc2_free_ctx(cctx);
    REQUIRE(n > 0);
    REQUIRE(blosc2_schunk_append_chunk(sc, chunk.data(), true) == i + 1);
  }
  blosc2_schunk_free(sc);
}

std::string ReadAll(const store::Container& c, const views::Node& file) {
  std::string out(static_cast<size_t>(file.Size(c)), '\0');
  auto n = file.Read(c, 0, out.size(), reinterpret_cast<uint8_t*>(out.data()));
  REQUIRE(n.ok());
  out.resize(*n);
  return out;
}

TEST_CASE("an ObjectArray shows items/ and meta.json, and every ordinal finds its name",
          "[views]") {
  testing::TempDir dir("b2ndfs_vlen_views");
  const std::string path = (dir.path / "objects.b2frame").string();
  WriteObjectArray(path, 70);
  testing::TestStore store(64u << 20, 1, 0);
  auto container = store.OpenLocal(path);
  REQUIRE(container->content_kind() == store::ContentKind::kObjects);
  auto registry = views::Registry::Default();
  const auto names = registry->RootNames(*container);
  CHECK(names == std::vector<std::string>{"meta.json", "items"});
  CHECK(registry->OrdinalCount(*container) == 1 + 1 + 140);

  auto items = registry->Root()->Lookup(*container, "items");
  REQUIRE(items.ok());
  auto listing = (*items)->List(*container);
  REQUIRE(listing.ok());
  REQUIRE((*listing)->size() == 140);
  CHECK((*listing)->at(0).name == "00.json");
  CHECK((*listing)->at(139).name == "69.msgpack");
  for (size_t i = 0; i < (*listing)->size(); ++i) {
    const views::ListEntry e = (*listing)->at(i);
    auto node = registry->NodeAt(*container, e.ordinal);
    REQUIRE(node.ok());
    CHECK((*node)->name() == e.name);
    CHECK((*node)->ordinal() == e.ordinal);
  }
  auto item = (*items)->Lookup(*container, "9.msgpack");  // unpadded
  REQUIRE(item.ok());
  CHECK((*item)->name() == "09.msgpack");
  const std::vector<uint8_t> want = Int32Item(63);
  CHECK(ReadAll(*container, **item) == std::string(want.begin(), want.end()));
  auto json = (*items)->Lookup(*container, "69.json");
  REQUIRE(json.ok());
  CHECK(ReadAll(*container, **json) == "483\n");
  CHECK((*items)->Lookup(*container, "70.json").status().error_number() == ENOENT);
  CHECK((*items)->Lookup(*container, "1.txt").status().error_number() == ENOENT);
  // The array views are not offered, and meta.json says so.
  CHECK(registry->Root()->Lookup(*container, "data").status().error_number() == ENOENT);
  bool data_absent = false;
  for (const auto& f : registry->Describe(*container)) {
    if (f.name == "data") data_absent = !f.absent.empty();
  }
  CHECK(data_absent);
}

}  // namespace
}  // namespace b2ndfs
