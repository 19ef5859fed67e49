// Unit tests of a container's meta.json (store/container.h): rendered on
// first use rather than at open, once, whichever threads ask at the same
// time, with the vlmetalayers c-blosc2 stored.
#include <b2nd.h>
#include <blosc2.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "b2nd_writer.h"
#include "b2ndfs/store/container.h"
#include "temp_dir.h"
#include "test_store.h"

namespace b2ndfs {
namespace {

// A small int32 array written with c-blosc2's API, with one vlmetalayer
// holding `note` (msgpack: a fixstr of up to 31 bytes).
void WriteArrayWithNote(const std::string& path, const std::string& note) {
  blosc2_cparams cp = BLOSC2_CPARAMS_DEFAULTS;
  cp.typesize = 4;
  cp.nthreads = 1;
  const int64_t shape[2] = {40, 30};
  const int32_t chunks[2] = {20, 30};
  const int32_t blocks[2] = {10, 10};
  std::vector<int32_t> data(40 * 30);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int32_t>(i);
  b2nd_array_t* array =
      testing::WriteContiguous(path, cp, 2, shape, chunks, blocks, "<i4", data.data(),
                               static_cast<int64_t>(data.size() * sizeof(int32_t)));
  REQUIRE(note.size() < 32);
  std::vector<uint8_t> packed{static_cast<uint8_t>(0xa0 | note.size())};
  packed.insert(packed.end(), note.begin(), note.end());
  REQUIRE(blosc2_vlmeta_add(array->sc, "note", packed.data(), static_cast<int32_t>(packed.size()),
                            nullptr) >= 0);
  b2nd_free(array);
}

TEST_CASE("meta.json is rendered once, by whichever reader comes first", "[container]") {
  testing::TempDir dir("b2ndfs_container_meta");
  const std::string path = (dir.path / "a.b2nd").string();
  WriteArrayWithNote(path, "made by the test");
  testing::TestStore store(64u << 20, 1, 0);
  auto container = store.OpenLocal(path);
  const int64_t charged_at_open = container->memory_bytes();

  constexpr int kThreads = 8;
  std::vector<const std::string*> seen(kThreads, nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] { seen[static_cast<size_t>(t)] = &container->meta_json(); });
  }
  for (auto& t : threads) t.join();
  for (const std::string* text : seen) CHECK(text == seen[0]);
  const std::string& text = *seen[0];
  CHECK(text.find("\"note\": \"made by the test\"") != std::string::npos);
  CHECK(text.find("\"shape\": [40, 30]") != std::string::npos);
  CHECK(&container->meta_json() == seen[0]);
  // The first reader moved the charge from the stored vlmetalayers to the
  // text; later ones change nothing.
  const int64_t after = container->memory_bytes();
  CHECK(after != charged_at_open);
  (void)container->meta_json();
  CHECK(container->memory_bytes() == after);
}

}  // namespace
}  // namespace b2ndfs
