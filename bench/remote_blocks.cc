// bench_remote_blocks: the c-blosc2 side of the remote benchmark
// (bench/remote.py): the array, what a slice's blocks cost, and what a
// block-unaware client does with whole chunks.
//
//   bench_remote_blocks write OUT.b2nd
//       a smooth float32 field with noise, shape {256,256,256}, chunks
//       {128,128,128} (8 MiB), blocks {16,16,16} (16 KiB: 1/512 of a chunk,
//       so an axis slice touches 1/8 of each chunk's blocks), zstd clevel 1
//       + shuffle, written with c-blosc2's b2nd API
//   bench_remote_blocks plan FILE.b2nd AXIS INDEX
//       the chunks the slice slices/AXIS/INDEX touches: each one's byte span
//       in the frame, its head (header + block starts) and the compressed
//       bytes of the blocks it touches, from the chunk's own block starts
//   bench_remote_blocks decode FILE.b2nd AXIS INDEX CHUNKDIR OUT
//       a block-unaware client: decompresses the whole chunks fetched into
//       CHUNKDIR/<nchunk> (2 threads) and copies the slice out of them into
//       OUT (C order); reports the time of that part
// Prints one JSON object.
#include <b2nd.h>
#include <blosc2.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace {

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "bench_remote_blocks: %s\n", message.c_str());
  std::exit(1);
}

constexpr int kNdim = 3;
const int64_t kShape[kNdim] = {256, 256, 256};
const int32_t kChunks[kNdim] = {128, 128, 128};
const int32_t kBlocks[kNdim] = {16, 16, 16};

int Write(const std::string& path) {
  const int64_t n = kShape[0] * kShape[1] * kShape[2];
  std::vector<float> values(static_cast<size_t>(n));
  std::mt19937 random(42);
  std::normal_distribution<float> noise(0.0f, 0.05f);
  for (int64_t i = 0; i < kShape[0]; ++i)
    for (int64_t j = 0; j < kShape[1]; ++j)
      for (int64_t k = 0; k < kShape[2]; ++k) {
        const float smooth = 280.0f +
                             10.0f * std::sin(0.03f * static_cast<float>(i)) *
                                 std::cos(0.05f * static_cast<float>(j)) +
                             0.02f * static_cast<float>(k);
        values[static_cast<size_t>((i * kShape[1] + j) * kShape[2] + k)] = smooth + noise(random);
      }
  blosc2_cparams cparams = BLOSC2_CPARAMS_DEFAULTS;
  cparams.compcode = BLOSC_ZSTD;
  cparams.clevel = 1;
  cparams.typesize = 4;
  cparams.nthreads = 2;
  blosc2_dparams dparams = BLOSC2_DPARAMS_DEFAULTS;
  blosc2_storage storage = BLOSC2_STORAGE_DEFAULTS;
  storage.contiguous = true;
  storage.urlpath = const_cast<char*>(path.c_str());
  storage.cparams = &cparams;
  storage.dparams = &dparams;
  blosc2_remove_urlpath(path.c_str());
  b2nd_context_t* ctx = b2nd_create_ctx(&storage, kNdim, kShape, kChunks, kBlocks, "<f4",
                                        DTYPE_NUMPY_FORMAT, nullptr, 0);
  b2nd_array_t* array = nullptr;
  if (ctx == nullptr ||
      b2nd_from_cbuffer(ctx, &array, values.data(), static_cast<int64_t>(values.size() * 4)) < 0) {
    Die("cannot write " + path);
  }
  std::printf("{\"path\":\"%s\",\"nbytes\":%lld,\"cbytes\":%lld}\n", path.c_str(),
              static_cast<long long>(array->sc->nbytes), static_cast<long long>(array->sc->cbytes));
  b2nd_free(array);
  b2nd_free_ctx(ctx);
  return 0;
}

int32_t Le32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

struct Geometry {
  int64_t shape[kNdim], chunks[kNdim], blocks[kNdim], chunks_per[kNdim], blocks_per[kNdim];
  int64_t itemsize;
};

Geometry GeometryOf(const b2nd_array_t* a) {
  Geometry g{};
  g.itemsize = a->sc->typesize;
  for (int d = 0; d < kNdim; ++d) {
    g.shape[d] = a->shape[d];
    g.chunks[d] = a->chunkshape[d];
    g.blocks[d] = a->blockshape[d];
    g.chunks_per[d] = (g.shape[d] + g.chunks[d] - 1) / g.chunks[d];
    g.blocks_per[d] = (g.chunks[d] + g.blocks[d] - 1) / g.blocks[d];
  }
  return g;
}

// Chunk numbers (C order over the chunk grid) the plane AXIS = INDEX crosses.
std::vector<int64_t> TouchedChunks(const Geometry& g, int axis, int64_t index) {
  std::vector<int64_t> out;
  for (int64_t c0 = 0; c0 < g.chunks_per[0]; ++c0)
    for (int64_t c1 = 0; c1 < g.chunks_per[1]; ++c1)
      for (int64_t c2 = 0; c2 < g.chunks_per[2]; ++c2) {
        const int64_t c[kNdim] = {c0, c1, c2};
        if (c[axis] != index / g.chunks[axis]) continue;
        out.push_back((c0 * g.chunks_per[1] + c1) * g.chunks_per[2] + c2);
      }
  return out;
}

b2nd_array_t* Open(const std::string& path) {
  b2nd_array_t* array = nullptr;
  if (b2nd_open(path.c_str(), &array) < 0 || array->ndim != kNdim) Die("cannot open " + path);
  return array;
}

int Plan(const std::string& path, int axis, int64_t index) {
  b2nd_array_t* array = Open(path);
  const Geometry g = GeometryOf(array);
  // Where each chunk lies in the file: the frame's offsets (relative to the
  // end of the frame header, whose length is a big-endian int32 at byte 11).
  std::ifstream file(path, std::ios::binary);
  std::vector<uint8_t> frame((std::istreambuf_iterator<char>(file)),
                             std::istreambuf_iterator<char>());
  if (frame.size() < 16) Die("short frame");
  const int64_t header_len = (int64_t{frame[11]} << 24) | (int64_t{frame[12]} << 16) |
                             (int64_t{frame[13]} << 8) | int64_t{frame[14]};
  int64_t* offsets = blosc2_frame_get_offsets(array->sc);
  if (offsets == nullptr) Die("no chunk offsets");
  int64_t head_total = 0, block_total = 0, chunk_total = 0, blocks_touched = 0, blocks_all = 0;
  std::string chunks_json;
  for (int64_t nchunk : TouchedChunks(g, axis, index)) {
    uint8_t* chunk = nullptr;
    bool needs_free = false;
    const int cbytes = blosc2_schunk_get_chunk(array->sc, nchunk, &chunk, &needs_free);
    if (cbytes < BLOSC_EXTENDED_HEADER_LENGTH) Die("cannot read chunk " + std::to_string(nchunk));
    const int64_t start = header_len + offsets[nchunk];
    if (start + cbytes > static_cast<int64_t>(frame.size()) ||
        std::memcmp(frame.data() + start, chunk, static_cast<size_t>(cbytes)) != 0) {
      Die("chunk " + std::to_string(nchunk) + " is not where the offsets say");
    }
    const int32_t nbytes = Le32(chunk + 4), blocksize = Le32(chunk + 8);
    const int32_t nblocks = (nbytes + blocksize - 1) / blocksize;
    const int64_t head = BLOSC_EXTENDED_HEADER_LENGTH + 4 * int64_t{nblocks};
    // Blocks whose span along AXIS holds INDEX (C order over the block grid).
    const int64_t within = index % g.chunks[axis] / g.blocks[axis];
    // A block ends where the next block in the chunk's bytes starts: blocks
    // compressed by several threads are stored in the order they finished.
    std::vector<int32_t> starts(static_cast<size_t>(nblocks));
    for (int32_t b = 0; b < nblocks; ++b)
      starts[b] = Le32(chunk + BLOSC_EXTENDED_HEADER_LENGTH + 4 * b);
    std::vector<int32_t> sorted = starts;
    std::sort(sorted.begin(), sorted.end());
    int64_t touched = 0, bytes = 0;
    for (int64_t b = 0; b < nblocks; ++b) {
      const int64_t b2 = b % g.blocks_per[2], b1 = b / g.blocks_per[2] % g.blocks_per[1],
                    b0 = b / (g.blocks_per[2] * g.blocks_per[1]);
      const int64_t pos[kNdim] = {b0, b1, b2};
      if (pos[axis] != within) continue;
      const int32_t begin = starts[static_cast<size_t>(b)];
      const auto next = std::upper_bound(sorted.begin(), sorted.end(), begin);
      const int32_t end = next == sorted.end() ? cbytes : *next;
      if (begin < head || end < begin) Die("unexpected block starts (a special chunk?)");
      bytes += end - begin;
      ++touched;
    }
    head_total += head;
    block_total += bytes;
    chunk_total += cbytes;
    blocks_touched += touched;
    blocks_all += nblocks;
    chunks_json +=
        std::string(chunks_json.empty() ? "" : ",") + "{\"nchunk\":" + std::to_string(nchunk) +
        ",\"offset\":" + std::to_string(start) + ",\"cbytes\":" + std::to_string(cbytes) +
        ",\"head\":" + std::to_string(head) + ",\"block_bytes\":" + std::to_string(bytes) + "}";
    if (needs_free) std::free(chunk);
  }
  std::printf(
      "{\"axis\":%d,\"index\":%lld,\"chunks\":[%s],\"head_bytes\":%lld,\"block_bytes\":%lld,"
      "\"chunk_bytes\":%lld,\"blocks_touched\":%lld,\"blocks_in_chunks\":%lld,\"slice_bytes\":%lld}"
      "\n",
      axis, static_cast<long long>(index), chunks_json.c_str(), static_cast<long long>(head_total),
      static_cast<long long>(block_total), static_cast<long long>(chunk_total),
      static_cast<long long>(blocks_touched), static_cast<long long>(blocks_all),
      static_cast<long long>(g.shape[(axis + 1) % 3] * g.shape[(axis + 2) % 3] * g.itemsize));
  b2nd_free(array);
  return 0;
}

int Decode(const std::string& path, int axis, int64_t index, const std::string& dir,
           const std::string& out_path) {
  b2nd_array_t* array = Open(path);
  const Geometry g = GeometryOf(array);
  const std::vector<int64_t> touched = TouchedChunks(g, axis, index);
  std::vector<std::vector<uint8_t>> compressed;
  for (int64_t nchunk : touched) {
    std::ifstream in(dir + "/" + std::to_string(nchunk), std::ios::binary);
    if (!in) Die("no fetched chunk " + std::to_string(nchunk) + " in " + dir);
    compressed.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  int other[2], n = 0;
  for (int d = 0; d < kNdim; ++d)
    if (d != axis) other[n++] = d;
  std::vector<uint8_t> slice(
      static_cast<size_t>(g.shape[other[0]] * g.shape[other[1]] * g.itemsize));
  const int64_t chunk_items = g.chunks[0] * g.chunks[1] * g.chunks[2];
  const int64_t block_items = g.blocks[0] * g.blocks[1] * g.blocks[2];
  std::vector<uint8_t> buffer(static_cast<size_t>(chunk_items * g.itemsize));
  blosc2_dparams dparams = BLOSC2_DPARAMS_DEFAULTS;
  dparams.nthreads = 2;
  blosc2_context* dctx = blosc2_create_dctx(dparams);
  std::memset(slice.data(), 0, slice.size());  // touched before the clock starts
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < touched.size(); ++i) {
    const int64_t nchunk = touched[i];
    if (blosc2_decompress_ctx(dctx, compressed[i].data(),
                              static_cast<int32_t>(compressed[i].size()), buffer.data(),
                              static_cast<int32_t>(buffer.size())) < 0) {
      Die("cannot decompress chunk " + std::to_string(nchunk));
    }
    const int64_t cpos[kNdim] = {nchunk / (g.chunks_per[1] * g.chunks_per[2]),
                                 nchunk / g.chunks_per[2] % g.chunks_per[1],
                                 nchunk % g.chunks_per[2]};
    // The chunk's items lie block after block, each block in C order.
    const int64_t q_axis = index - cpos[axis] * g.chunks[axis];
    for (int64_t u = 0; u < g.chunks[other[0]]; ++u) {
      for (int64_t v = 0; v < g.chunks[other[1]]; ++v) {
        int64_t q[kNdim];
        q[axis] = q_axis;
        q[other[0]] = u;
        q[other[1]] = v;
        int64_t p[kNdim];
        bool inside = true;
        for (int d = 0; d < kNdim; ++d) {
          p[d] = cpos[d] * g.chunks[d] + q[d];
          inside = inside && p[d] < g.shape[d];
        }
        if (!inside) continue;
        const int64_t block =
            ((q[0] / g.blocks[0]) * g.blocks_per[1] + q[1] / g.blocks[1]) * g.blocks_per[2] +
            q[2] / g.blocks[2];
        const int64_t in_block =
            ((q[0] % g.blocks[0]) * g.blocks[1] + q[1] % g.blocks[1]) * g.blocks[2] +
            q[2] % g.blocks[2];
        const int64_t from = (block * block_items + in_block) * g.itemsize;
        const int64_t to = (p[other[0]] * g.shape[other[1]] + p[other[1]]) * g.itemsize;
        std::memcpy(slice.data() + to, buffer.data() + from, static_cast<size_t>(g.itemsize));
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  blosc2_free_ctx(dctx);
  std::ofstream out(out_path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(slice.data()),
            static_cast<std::streamsize>(slice.size()));
  std::printf("{\"decode_seconds\":%.6f,\"chunks\":%zu}\n", seconds, touched.size());
  b2nd_free(array);
  return out ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  blosc2_init();
  const std::vector<std::string> args(argv + 1, argv + argc);
  int rc = 2;
  if (args.size() == 2 && args[0] == "write") {
    rc = Write(args[1]);
  } else if (args.size() == 4 && args[0] == "plan") {
    rc = Plan(args[1], std::atoi(args[2].c_str()), std::atoll(args[3].c_str()));
  } else if (args.size() == 6 && args[0] == "decode") {
    rc = Decode(args[1], std::atoi(args[2].c_str()), std::atoll(args[3].c_str()), args[4], args[5]);
  } else {
    std::fputs(
        "usage: bench_remote_blocks write OUT.b2nd\n"
        "       bench_remote_blocks plan FILE.b2nd AXIS INDEX\n"
        "       bench_remote_blocks decode FILE.b2nd AXIS INDEX CHUNKDIR OUT\n",
        stderr);
  }
  blosc2_destroy();
  return rc;
}
