// Tests of geometry against brute-force references: every item of every box is
// located by direct arithmetic on its coordinates and compared with what the
// layout's block walk, range decomposition and region copy report.

#include "b2ndfs/geometry/geometry.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "geometry_test_util.h"

namespace b2ndfs::geometry {
namespace {

using testing::Coords;
using testing::ForEachItem;
using testing::Rand;

std::vector<Coords> Items(const Box& box) {
  std::vector<Coords> items;
  ForEachItem(box, [&](const Coords& x) { items.push_back(x); });
  return items;
}

// C-order offset of `x` inside a buffer covering `box`.
int64_t OffsetIn(const Box& box, const Coords& x) {
  int64_t offset = 0;
  for (int i = 0; i < box.ndim(); ++i) {
    offset = offset * (box.stop[i] - box.start[i]) + (x[i] - box.start[i]);
  }
  return offset;
}

int64_t LinearIn(const Coords& coords, const Shape& shape) {
  int64_t offset = 0;
  for (size_t i = 0; i < shape.size(); ++i) offset = offset * shape[i] + coords[i];
  return offset;
}

bool Contains(const Box& outer, const Box& inner) {
  for (int i = 0; i < outer.ndim(); ++i) {
    if (inner.start[i] < outer.start[i] || inner.stop[i] > outer.stop[i]) return false;
  }
  return true;
}

bool InBox(const Box& box, const Coords& x) {
  for (int i = 0; i < box.ndim(); ++i) {
    if (x[i] < box.start[i] || x[i] >= box.stop[i]) return false;
  }
  return true;
}

// Per-axis bound keeping a random array at a few thousand items.
int64_t MaxExtent(int ndim) {
  static constexpr int64_t kMax[] = {1, 40, 15, 8, 6, 4};
  return kMax[ndim];
}

ArrayLayout RandomRegular(std::mt19937& rng, int ndim, int64_t itemsize = 4) {
  Shape shape(ndim), chunk(ndim), block(ndim);
  const int64_t max = MaxExtent(ndim);
  for (int i = 0; i < ndim; ++i) {
    shape[i] = Rand(rng, 0, 9) == 0 ? 0 : Rand(rng, 1, max);
    chunk[i] = Rand(rng, 1, max + 2);  // sometimes larger than the array
    block[i] = Rand(rng, 0, 3) == 0 ? chunk[i] : Rand(rng, 1, chunk[i]);
  }
  auto layout = ArrayLayout::Regular(shape, chunk, block, itemsize);
  REQUIRE(layout.ok());
  return std::move(layout).value();
}

Box RandomBoxIn(std::mt19937& rng, const Shape& shape) {
  Box box;
  for (int64_t s : shape) {
    const int64_t a = Rand(rng, 0, s);
    const int64_t b = Rand(rng, 0, s);
    box.start.push_back(std::min(a, b));
    box.stop.push_back(std::max(a, b));
  }
  // Empty boxes are rare when drawn this way but worth keeping; full-axis
  // boxes are common in practice, so bias toward them too.
  if (Rand(rng, 0, 4) == 0) box = Box::FromShape(shape);
  return box;
}

// Where an item lives: chunk index, block index, item offset in the chunk's
// decompressed buffer.
using Location = std::tuple<int64_t, int64_t, int64_t>;

Location BruteRegular(const ArrayLayout& layout, const Coords& x) {
  const int n = layout.ndim();
  Shape grid(n), block_grid(n), chunk_coords(n), block_coords(n), in_block(n);
  for (int i = 0; i < n; ++i) {
    const int64_t c = layout.chunkshape()[i];
    const int64_t b = layout.blockshape()[i];
    grid[i] = (layout.shape()[i] + c - 1) / c;
    block_grid[i] = (c + b - 1) / b;
    chunk_coords[i] = x[i] / c;
    const int64_t r = x[i] % c;
    block_coords[i] = r / b;
    in_block[i] = r % b;
  }
  int64_t block_items = 1;
  for (int64_t b : layout.blockshape()) block_items *= b;
  const int64_t block = LinearIn(block_coords, block_grid);
  return {LinearIn(chunk_coords, grid), block,
          block * block_items + LinearIn(in_block, layout.blockshape())};
}

// Runs ForEachBlockIn(box) and checks it against `brute` item by item.
void CheckBlockWalk(const ArrayLayout& layout, const Box& box,
                    const std::function<Location(const Coords&)>& brute) {
  INFO("shape " << ToString(Box::FromShape(layout.shape())) << " chunk "
                << ToString(Box::FromShape(layout.chunkshape())) << " block "
                << ToString(Box::FromShape(layout.blockshape())) << " box " << ToString(box));
  const Box array = Box::FromShape(layout.shape());
  std::vector<int> coverage(static_cast<size_t>(layout.NumItems()), 0);
  std::set<std::pair<int64_t, int64_t>> reported;
  std::pair<int64_t, int64_t> previous{-1, -1};
  int64_t mismatches = 0;
  std::string first_mismatch;
  auto mismatch = [&](const std::string& what) {
    if (mismatches++ == 0) first_mismatch = what;
  };

  layout.ForEachBlockIn(box, [&](const BlockRef& ref, const Box& region) {
    const std::pair<int64_t, int64_t> key{ref.chunk_index, ref.block_index};
    if (!(previous < key)) mismatch("order: " + ToString(region));
    previous = key;
    reported.insert(key);
    if (ref.chunk_index < 0 || ref.chunk_index >= layout.NumChunks()) {
      mismatch("chunk index out of range");
      return;
    }
    if (ref.block_index < 0 || ref.block_index >= layout.BlocksInChunk(ref.chunk_index)) {
      mismatch("block index out of range");
      return;
    }
    const Box chunk_box = layout.ChunkBox(ref.chunk_index);
    if (region.empty()) mismatch("empty region");
    if (region != Intersect(Intersect(box, chunk_box), ref.block_box)) {
      mismatch("region " + ToString(region) + " != box ∩ chunk ∩ block");
    }
    if (!Contains(box, region) || !Contains(chunk_box, region) ||
        !Contains(ref.block_box, region)) {
      mismatch("region outside its boxes");
    }
    if (ref.block_box.NumItems() != layout.BlockItems(ref.chunk_index, ref.block_index)) {
      mismatch("block_box size != BlockItems");
    }
    const int64_t first = layout.BlockFirstItem(ref.chunk_index, ref.block_index);
    ForEachItem(region, [&](const Coords& x) {
      ++coverage[OffsetIn(array, x)];
      const int64_t pos = first + OffsetIn(ref.block_box, x);
      const Location got{ref.chunk_index, ref.block_index, pos};
      if (got != brute(x)) mismatch("location of item " + ToString(Box{x, x}));
      if (pos >= layout.ChunkStoredItems(ref.chunk_index)) mismatch("past chunk end");
    });
  });

  std::set<std::pair<int64_t, int64_t>> expected;
  ForEachItem(array, [&](const Coords& x) {
    const bool inside = InBox(box, x);
    if (coverage[OffsetIn(array, x)] != (inside ? 1 : 0)) mismatch("coverage");
    if (inside) {
      const auto [c, b, p] = brute(x);
      expected.insert({c, b});
    }
  });
  INFO(first_mismatch);
  REQUIRE(mismatches == 0);
  REQUIRE(reported == expected);
}

// ---------------------------------------------------------------------------

TEST_CASE("Box basics") {
  Box box{{0, 2}, {4, 3}};
  CHECK(ToString(box) == "[0:4, 2:3]");
  CHECK(box.NumItems() == 4);
  CHECK(box.shape() == Shape{4, 1});
  CHECK(Box{}.NumItems() == 1);
  CHECK(ToString(Box{}) == "[]");
  CHECK(Box::FromShape({3, 0}).empty());
  const Box i = Intersect(Box{{0, 0}, {4, 4}}, Box{{2, 5}, {6, 9}});
  CHECK(i.empty());
  CHECK(i.shape() == Shape{2, 0});
  CHECK(Intersect(Box{{0, 0}, {4, 4}}, Box{{2, 1}, {6, 3}}) == Box{{2, 1}, {4, 3}});
}

TEST_CASE("Regular layout worked example") {
  auto r = ArrayLayout::Regular({10, 7}, {4, 4}, {3, 2}, 8);
  REQUIRE(r.ok());
  const ArrayLayout& l = *r;
  CHECK(l.regular());
  CHECK(l.NumItems() == 70);
  CHECK(l.ChunkGridShape() == Shape{3, 2});
  CHECK(l.NumChunks() == 6);
  CHECK(l.ChunkStoredItems(0) == 24);  // extchunkshape {6, 4}
  CHECK(l.BlocksInChunk(0) == 4);
  CHECK(l.BlockItems(0, 3) == 6);
  CHECK(l.BlockFirstItem(0, 3) == 18);
  CHECK(l.ChunkCoords(5) == Coords{2, 1});
  CHECK(l.ChunkBox(5) == Box{{8, 4}, {10, 7}});
  // Chunk (2, 1) holds rows 8..9 and columns 4..6: only block row 0 has data,
  // and blocks (1, *) are pure padding past chunkshape.
  std::vector<std::pair<int64_t, Box>> seen;
  l.ForEachBlockIn(l.ChunkBox(5), [&](const BlockRef& ref, const Box& region) {
    CHECK(ref.chunk_index == 5);
    seen.push_back({ref.block_index, region});
  });
  REQUIRE(seen.size() == 2);
  CHECK(seen[0] == std::pair<int64_t, Box>{0, Box{{8, 4}, {10, 6}}});
  CHECK(seen[1] == std::pair<int64_t, Box>{1, Box{{8, 6}, {10, 7}}});
}

TEST_CASE("0-D arrays hold one item in one block") {
  auto r = ArrayLayout::Regular({}, {}, {}, 8);
  REQUIRE(r.ok());
  const ArrayLayout& l = *r;
  CHECK(l.ndim() == 0);
  CHECK(l.NumItems() == 1);
  CHECK(l.NumChunks() == 1);
  CHECK(l.ChunkIndex({}) == 0);
  CHECK(l.ChunkBox(0) == Box{});
  CHECK(l.ChunkStoredItems(0) == 1);
  CHECK(l.BlocksInChunk(0) == 1);
  CHECK(l.BlockItems(0, 0) == 1);
  int calls = 0;
  l.ForEachBlockIn(Box{}, [&](const BlockRef& ref, const Box& region) {
    ++calls;
    CHECK(ref.chunk_index == 0);
    CHECK(ref.block_index == 0);
    CHECK(region == Box{});
  });
  CHECK(calls == 1);
  CHECK(LinearRangeToBoxes(Box{}, 0, 1) == std::vector<Box>{Box{}});
  CHECK(LinearRangeToBoxes(Box{}, 0, 0).empty());
  const uint8_t src[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  uint8_t dst[8] = {};
  CopyRegion(src, Box{}, dst, Box{}, Box{}, 8);
  CHECK(std::memcmp(src, dst, 8) == 0);
}

TEST_CASE("a zero-length axis has no chunks") {
  auto r = ArrayLayout::Regular({5, 0, 3}, {2, 2, 2}, {1, 1, 1}, 4);
  REQUIRE(r.ok());
  CHECK(r->NumItems() == 0);
  CHECK(r->NumChunks() == 0);
  CHECK(r->ChunkGridShape() == Shape{3, 0, 2});
  CHECK(r->ChunkIndex(Coords{0, 0, 0}) == -1);
  int calls = 0;
  r->ForEachBlockIn(Box::FromShape(r->shape()), [&](const BlockRef&, const Box&) { ++calls; });
  CHECK(calls == 0);
}

TEST_CASE("ForEachBlockIn costs blocks touched, not blocks in the grid") {
  // 2^30 blocks per chunk: walking every block would take far too long.
  auto r = ArrayLayout::Regular({int64_t{1} << 30, int64_t{1} << 30},
                                {int64_t{1} << 15, int64_t{1} << 15}, {1, 1}, 1);
  REQUIRE(r.ok());
  const int64_t edge = int64_t{1} << 15;
  std::vector<BlockRef> refs;
  r->ForEachBlockIn(Box{{edge - 1, edge - 1}, {edge + 1, edge + 1}},
                    [&](const BlockRef& ref, const Box& region) {
                      CHECK(region.NumItems() == 1);
                      refs.push_back(ref);
                    });
  REQUIRE(refs.size() == 4);
  const int64_t grid = int64_t{1} << 15;
  CHECK(refs[0].chunk_index == 0);
  CHECK(refs[0].block_index == edge * edge - 1);
  CHECK(refs[1].chunk_index == 1);
  CHECK(refs[1].block_index == (edge - 1) * edge);
  CHECK(refs[2].chunk_index == grid);
  CHECK(refs[2].block_index == edge - 1);
  CHECK(refs[3].chunk_index == grid + 1);
  CHECK(refs[3].block_index == 0);
}

TEST_CASE("ForEachBlockIn matches brute force on random regular layouts") {
  std::mt19937 rng(20240611);
  for (int trial = 0; trial < 1500; ++trial) {
    const int ndim = trial % 6;
    const ArrayLayout layout = RandomRegular(rng, ndim);
    const Box box = RandomBoxIn(rng, layout.shape());
    CheckBlockWalk(layout, box, [&](const Coords& x) { return BruteRegular(layout, x); });
  }
}

TEST_CASE("AppendBlockPieces and BlockOf agree with ForEachBlockIn") {
  std::mt19937 rng(31337);
  for (int trial = 0; trial < 1500; ++trial) {
    const int ndim = trial % 6;
    const ArrayLayout layout = RandomRegular(rng, ndim);
    const Box box = RandomBoxIn(rng, layout.shape());
    std::vector<int64_t> expected;  // chunk, block, then the 4 * ndim coordinates
    int64_t expected_items = 0;
    layout.ForEachBlockIn(box, [&](const BlockRef& ref, const Box& region) {
      expected.push_back(ref.chunk_index);
      expected.push_back(ref.block_index);
      for (const Coords* v :
           {&ref.block_box.start, &ref.block_box.stop, &region.start, &region.stop}) {
        expected.insert(expected.end(), v->begin(), v->end());
      }
      expected_items += region.NumItems();
    });
    std::vector<BlockPiece> pieces(1);  // appended to, not replaced
    std::vector<int64_t> coords(3, -1);
    REQUIRE(layout.AppendBlockPieces(box, 7, pieces, coords) == expected_items);
    std::vector<int64_t> got;
    for (size_t k = 1; k < pieces.size(); ++k) {
      REQUIRE(pieces[k].tag == 7);
      REQUIRE(pieces[k].coords == 3 + (k - 1) * 4 * static_cast<size_t>(ndim));
      got.push_back(pieces[k].chunk_index);
      got.push_back(pieces[k].block_index);
      got.insert(got.end(), coords.begin() + static_cast<ptrdiff_t>(pieces[k].coords),
                 coords.begin() + static_cast<ptrdiff_t>(pieces[k].coords) + 4 * ndim);
    }
    REQUIRE(got == expected);
    for (int k = 0; k < 4 && !box.empty(); ++k) {
      Coords x(ndim);
      for (int i = 0; i < ndim; ++i) x[i] = Rand(rng, box.start[i], box.stop[i] - 1);
      const auto [chunk, block, offset] = BruteRegular(layout, x);
      REQUIRE(layout.BlockOf(x) == std::make_pair(chunk, block));
    }
  }
  // Irregular1D: the chunk holding an item skips empty chunks before it.
  auto l = ArrayLayout::Irregular1D({3, 0, 0, 5, 4}, {2, 1, 1, 3, 4}, 1);
  REQUIRE(l.ok());
  CHECK(l->BlockOf(Coords{0}) == std::make_pair<int64_t, int64_t>(0, 0));
  CHECK(l->BlockOf(Coords{2}) == std::make_pair<int64_t, int64_t>(0, 1));
  CHECK(l->BlockOf(Coords{3}) == std::make_pair<int64_t, int64_t>(3, 0));
  CHECK(l->BlockOf(Coords{7}) == std::make_pair<int64_t, int64_t>(3, 1));
  CHECK(l->BlockOf(Coords{8}) == std::make_pair<int64_t, int64_t>(4, 0));
  CHECK(l->BlockOf(Coords{11}) == std::make_pair<int64_t, int64_t>(4, 0));
}

TEST_CASE("chunk grid, coordinates and boxes match brute force") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 600; ++trial) {
    const int ndim = trial % 6;
    const ArrayLayout l = RandomRegular(rng, ndim);
    const Shape& shape = l.shape();
    Shape grid(ndim);
    int64_t nchunks = 1, blocks = 1, stored = 1, block_items = 1;
    for (int i = 0; i < ndim; ++i) {
      const int64_t c = l.chunkshape()[i], b = l.blockshape()[i];
      grid[i] = (shape[i] + c - 1) / c;
      nchunks *= grid[i];
      blocks *= (c + b - 1) / b;
      stored *= (c + b - 1) / b * b;
      block_items *= b;
    }
    REQUIRE(l.ChunkGridShape() == grid);
    REQUIRE(l.NumChunks() == nchunks);
    int64_t covered = 0;
    for (int64_t ci = 0; ci < nchunks; ++ci) {
      const Coords coords = l.ChunkCoords(ci);
      REQUIRE(LinearIn(coords, grid) == ci);
      REQUIRE(l.ChunkIndex(coords) == ci);
      Box expected;
      for (int i = 0; i < ndim; ++i) {
        expected.start.push_back(coords[i] * l.chunkshape()[i]);
        expected.stop.push_back(std::min(shape[i], (coords[i] + 1) * l.chunkshape()[i]));
      }
      const Box box = l.ChunkBox(ci);
      REQUIRE(box == expected);
      REQUIRE(!box.empty());
      covered += box.NumItems();
      REQUIRE(l.ChunkStoredItems(ci) == stored);
      REQUIRE(l.BlocksInChunk(ci) == blocks);
      for (int64_t bi = 0; bi < blocks; ++bi) {
        REQUIRE(l.BlockItems(ci, bi) == block_items);
        REQUIRE(l.BlockFirstItem(ci, bi) == bi * block_items);
      }
    }
    REQUIRE(covered == l.NumItems());
    if (ndim > 0) {
      Coords outside(ndim, 0);
      outside[trial % ndim] = grid[trial % ndim];
      CHECK(l.ChunkIndex(outside) == -1);
      outside[trial % ndim] = -1;
      CHECK(l.ChunkIndex(outside) == -1);
    }
    CHECK(l.ChunkIndex(Coords(ndim + 1, 0)) == -1);
  }
}

TEST_CASE("Irregular1D layouts match brute force") {
  std::mt19937 rng(99);
  for (int trial = 0; trial < 400; ++trial) {
    const int nchunks = static_cast<int>(Rand(rng, 0, 8));
    std::vector<int64_t> lens, bns;
    for (int i = 0; i < nchunks; ++i) {
      lens.push_back(Rand(rng, 0, 2) == 0 ? 0 : Rand(rng, 1, 25));
      bns.push_back(Rand(rng, 1, 9));
    }
    auto r = ArrayLayout::Irregular1D(lens, bns, 2);
    REQUIRE(r.ok());
    const ArrayLayout& l = *r;
    std::vector<int64_t> starts{0};
    for (int64_t n : lens) starts.push_back(starts.back() + n);
    REQUIRE_FALSE(l.regular());
    REQUIRE(l.ndim() == 1);
    REQUIRE(l.shape() == Shape{starts.back()});
    REQUIRE(l.NumItems() == starts.back());
    REQUIRE(l.NumChunks() == nchunks);
    REQUIRE(l.ChunkGridShape() == Shape{nchunks});
    REQUIRE(l.chunkshape() ==
            Shape{lens.empty() ? 0 : *std::max_element(lens.begin(), lens.end())});
    REQUIRE(l.blockshape() == Shape{bns.empty() ? 0 : *std::max_element(bns.begin(), bns.end())});
    for (int i = 0; i < nchunks; ++i) {
      REQUIRE(l.ChunkCoords(i) == Coords{i});
      REQUIRE(l.ChunkIndex(Coords{i}) == i);
      REQUIRE(l.ChunkBox(i) == Box{{starts[i]}, {starts[i + 1]}});
      REQUIRE(l.ChunkStoredItems(i) == lens[i]);
      const int64_t blocks = (lens[i] + bns[i] - 1) / bns[i];
      REQUIRE(l.BlocksInChunk(i) == blocks);
      for (int64_t j = 0; j < blocks; ++j) {
        REQUIRE(l.BlockFirstItem(i, j) == j * bns[i]);
        REQUIRE(l.BlockItems(i, j) == std::min(bns[i], lens[i] - j * bns[i]));
      }
    }
    CHECK(l.ChunkIndex(Coords{nchunks}) == -1);
    CHECK(l.ChunkIndex(Coords{-1}) == -1);

    auto brute = [&](const Coords& x) -> Location {
      for (int i = 0; i < nchunks; ++i) {
        if (x[0] >= starts[i] && x[0] < starts[i + 1]) {
          const int64_t within = x[0] - starts[i];
          return {i, within / bns[i], within};
        }
      }
      FAIL("item outside every chunk");
      return {};
    };
    for (int k = 0; k < 4; ++k) CheckBlockWalk(l, RandomBoxIn(rng, l.shape()), brute);
  }
}

TEST_CASE("LinearRangeToBoxes concatenates to exactly the range") {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 3000; ++trial) {
    const int ndim = trial % 6;
    Box box;
    for (int i = 0; i < ndim; ++i) {
      const int64_t start = Rand(rng, 0, 5);
      box.start.push_back(start);
      box.stop.push_back(start + (Rand(rng, 0, 15) == 0 ? 0 : Rand(rng, 1, MaxExtent(ndim))));
    }
    const std::vector<Coords> all = Items(box);
    const auto n = static_cast<int64_t>(all.size());
    int64_t b = Rand(rng, 0, n), e = Rand(rng, 0, n);
    if (b > e) std::swap(b, e);
    // Whole rows and whole boxes are common requests; make sure they appear.
    if (trial % 7 == 0) b = 0;
    if (trial % 11 == 0) e = n;
    INFO("box " << ToString(box) << " range [" << b << ", " << e << ")");
    const std::vector<Box> pieces = LinearRangeToBoxes(box, b, e);
    REQUIRE(static_cast<int>(pieces.size()) <= std::max(1, 2 * ndim - 1));
    std::vector<Coords> got;
    for (const Box& p : pieces) {
      REQUIRE(p.ndim() == ndim);
      REQUIRE_FALSE(p.empty());
      REQUIRE(Contains(box, p));
      for (const Coords& x : Items(p)) got.push_back(x);
    }
    REQUIRE(got == std::vector<Coords>(all.begin() + b, all.begin() + e));
  }
}

TEST_CASE("LinearRangeToBoxes on every range of a small box") {
  const Box box{{1, 0, 2}, {4, 3, 6}};  // 3 x 3 x 4
  const std::vector<Coords> all = Items(box);
  const auto n = static_cast<int64_t>(all.size());
  for (int64_t b = 0; b <= n; ++b) {
    for (int64_t e = b; e <= n; ++e) {
      const std::vector<Box> pieces = LinearRangeToBoxes(box, b, e);
      REQUIRE(pieces.size() <= 5);
      std::vector<Coords> got;
      for (const Box& p : pieces) {
        for (const Coords& x : Items(p)) got.push_back(x);
      }
      REQUIRE(got == std::vector<Coords>(all.begin() + b, all.begin() + e));
    }
  }
}

TEST_CASE("CopyRegion from block buffers assembles the array") {
  // The read path in miniature: decompressed chunk buffers (filled by the
  // brute-force location of each item) copied block by block into a box.
  std::mt19937 rng(555);
  for (int trial = 0; trial < 300; ++trial) {
    const int ndim = trial % 6;
    const int64_t itemsize = 8;
    const ArrayLayout l = RandomRegular(rng, ndim, itemsize);
    const Box array = Box::FromShape(l.shape());
    const Box box = RandomBoxIn(rng, l.shape());
    // Item value = its C-order offset in the array; chunk buffers hold it at
    // the brute-force position, and padding holds a poison value.
    std::vector<std::vector<int64_t>> chunks(static_cast<size_t>(l.NumChunks()));
    for (int64_t c = 0; c < l.NumChunks(); ++c) chunks[c].assign(l.ChunkStoredItems(c), -1);
    ForEachItem(array, [&](const Coords& x) {
      const auto [c, b, p] = BruteRegular(l, x);
      chunks[c][p] = OffsetIn(array, x);
    });
    std::vector<int64_t> out(static_cast<size_t>(box.NumItems()), -2);
    l.ForEachBlockIn(box, [&](const BlockRef& ref, const Box& region) {
      const int64_t* block =
          chunks[ref.chunk_index].data() + l.BlockFirstItem(ref.chunk_index, ref.block_index);
      CopyRegion(reinterpret_cast<const uint8_t*>(block), ref.block_box,
                 reinterpret_cast<uint8_t*>(out.data()), box, region, itemsize);
    });
    std::vector<int64_t> expected;
    ForEachItem(box, [&](const Coords& x) { expected.push_back(OffsetIn(array, x)); });
    REQUIRE(out == expected);
  }
}

TEST_CASE("Regular rejects malformed layouts") {
  struct Case {
    Shape shape, chunk, block;
    int64_t itemsize;
    std::string needle;  // the message must name what is wrong
  };
  const int64_t big = int64_t{1} << 62;
  const std::vector<Case> cases = {
      {{10, 10, 10}, {5, 5, 0}, {1, 1, 1}, 4, "chunkshape[2] is 0"},
      {{10, -1}, {5, 5}, {1, 1}, 4, "shape[1] is -1"},
      {{10, 10}, {5, 5}, {1, 0}, 4, "blockshape[1] is 0"},
      {{10, 10}, {5, -5}, {1, 1}, 4, "chunkshape[1] is -5"},
      {{10, 10}, {5, 5}, {6, 1}, 4, "blockshape[0] is 6"},
      {{10, 10}, {5, 5}, {1, 1}, 0, "itemsize is 0"},
      {{10, 10}, {5, 5}, {1, 1}, -8, "itemsize is -8"},
      {{10, 10}, {5}, {1, 1}, 4, "chunkshape has 1"},
      {{10, 10}, {5, 5}, {1, 1, 1}, 4, "blockshape 3"},
      {Shape(128, 1), Shape(128, 1), Shape(128, 1), 4, "ndim is 128"},
      {{big, 4}, {1, 4}, {1, 4}, 8, "array size"},
      {{big, 2}, {1, 2}, {1, 2}, 1, "array size"},
      {{4, 4}, {big, 4}, {big, 4}, 1, "chunk size"},
      {{4}, {big}, {big}, 2, "chunk size"},
      // extchunkshape itself overflows: ceil(c / b) * b > INT64_MAX.
      {{4}, {INT64_MAX}, {INT64_MAX - 1}, 1, "extchunkshape[0]"},
  };
  for (const Case& c : cases) {
    auto r = ArrayLayout::Regular(c.shape, c.chunk, c.block, c.itemsize);
    INFO("expecting: " << c.needle);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().error_number() == EIO);
    INFO("got: " << r.status().message());
    CHECK(r.status().message().find(c.needle) != std::string::npos);
  }
  // At the limits, still valid.
  CHECK(ArrayLayout::Regular(Shape(127, 1), Shape(127, 1), Shape(127, 1), 4).ok());
  CHECK(ArrayLayout::Regular({big, 0}, {1, 1}, {1, 1}, 8).ok());
  CHECK(ArrayLayout::Regular({0, big, big}, {1, 1, 1}, {1, 1, 1}, 8).ok());
  CHECK(ArrayLayout::Regular({3}, {7}, {7}, 1).ok());  // chunk larger than the array
}

TEST_CASE("Irregular1D rejects malformed layouts") {
  const int64_t big = int64_t{1} << 62;
  auto fails = [](std::vector<int64_t> lens, std::vector<int64_t> bns, int64_t itemsize,
                  const std::string& needle) {
    auto r = ArrayLayout::Irregular1D(std::move(lens), std::move(bns), itemsize);
    INFO("expecting: " << needle);
    REQUIRE_FALSE(r.ok());
    INFO("got: " << r.status().message());
    CHECK(r.status().message().find(needle) != std::string::npos);
  };
  fails({4, -1}, {2, 2}, 1, "chunk_nitems[1] is -1");
  fails({4, 4}, {2, 0}, 1, "block_nitems[1] is 0");
  fails({4, 4}, {2}, 1, "block_nitems has 1");
  fails({4}, {2}, 0, "itemsize is 0");
  fails({big, big}, {1, 1}, 1, "overflows");
  fails({big}, {1}, 2, "overflows");
  CHECK(ArrayLayout::Irregular1D({}, {}, 1).ok());
  CHECK(ArrayLayout::Irregular1D({0, 0}, {1, 1}, 1).ok());
  CHECK(ArrayLayout::Irregular1D({3}, {100}, 1).ok());  // one short block
}

}  // namespace
}  // namespace b2ndfs::geometry
