// bench_make_array: writes the benchmark's data with c-blosc2's own b2nd API.
//
//   bench_make_array --size-mb N --b2nd PATH [--npy PATH] [--tiny-dir DIR --tiny-count K]
//                    [--chunks C0,C1,C2] [--blocks B0,B1,B2] [--codec zstd|lz4|blosclz]
//                    [--clevel L] [--shuffle 0|1]
//
// PATH.b2nd  a smooth float32 3-D field with noise (like a temperature
//            reanalysis), about N MiB uncompressed, written with 2 threads;
//            by default chunks {64,128,128}, blocks {16,32,32}, zstd clevel 1
//            + shuffle (the geometry sweep of bench.py passes its own)
// PATH.npy   the same array as a plain NumPy file (for the squashfs route)
// DIR        K copies of one tiny container (c00000.b2nd ...), for `ls -l`
// Prints one JSON object describing what it wrote.
#include <b2nd.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.h"

namespace {

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "bench_make_array: %s\n", message.c_str());
  std::exit(1);
}

// About `size_mb` MiB of float32: the two inner axes 512 (up to 512 MiB) or
// 1024 wide, the outer one whatever makes up the size.
std::vector<int64_t> ShapeFor(int64_t size_mb) {
  const int64_t items = size_mb * (1 << 18);
  const int64_t inner = size_mb >= 1024 ? 1024 : 512;
  const int64_t outer = std::max<int64_t>(16, items / (inner * inner));
  return {outer, inner, inner};
}

void Generate(const std::vector<int64_t>& shape, std::vector<float>& field) {
  const int64_t n0 = shape[0], n1 = shape[1], n2 = shape[2];
  field.resize(static_cast<size_t>(n0 * n1 * n2));
  const double two_pi = 2.0 * M_PI;
  auto work = [&](int64_t z_begin, int64_t z_end) {
    bench::Rng rng(0x1234 + static_cast<uint64_t>(z_begin));
    std::vector<float> per_x(static_cast<size_t>(n2));
    for (int64_t z = z_begin; z < z_end; ++z) {
      const double season = std::sin(two_pi * static_cast<double>(z) / static_cast<double>(n0));
      for (int64_t x = 0; x < n2; ++x) {
        per_x[static_cast<size_t>(x)] = static_cast<float>(
            5.0 * std::cos(two_pi * 3.0 * static_cast<double>(x) / static_cast<double>(n2) +
                           0.7 * season));
      }
      for (int64_t y = 0; y < n1; ++y) {
        const double lat = static_cast<double>(y) / static_cast<double>(n1);
        const float base = static_cast<float>(
            280.0 + 12.0 * std::sin(two_pi * 1.5 * lat + 0.01 * static_cast<double>(z)) * season -
            30.0 * (lat - 0.5) * (lat - 0.5));
        float* row = field.data() + (z * n1 + y) * n2;
        for (int64_t x = 0; x < n2; x += 2) {
          // Two triangular noise samples (sd ~0.04 K) from one 64-bit draw.
          const uint64_t r = rng.Next();
          const float a = static_cast<float>((r & 0xffff) + ((r >> 16) & 0xffff)) / 65536.0f - 1.0f;
          const float b = static_cast<float>(((r >> 32) & 0xffff) + (r >> 48)) / 65536.0f - 1.0f;
          row[x] = base + per_x[static_cast<size_t>(x)] + 0.1f * a;
          if (x + 1 < n2) row[x + 1] = base + per_x[static_cast<size_t>(x + 1)] + 0.1f * b;
        }
      }
    }
  };
  const int64_t half = n0 / 2;
  std::thread helper(work, half, n0);
  work(0, half);
  helper.join();
}

void WriteAll(int fd, const void* data, size_t size, const std::string& path) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, std::min<size_t>(size, 64u << 20));
    if (n <= 0) Die("cannot write " + path);
    p += n;
    size -= static_cast<size_t>(n);
  }
}

std::string NpyHeader(const std::vector<int64_t>& shape) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) {
    dict +=
        std::to_string(shape[i]) + (shape.size() == 1 ? "," : (i + 1 < shape.size() ? ", " : ""));
  }
  dict += "), }";
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string header("\x93NUMPY\x01\x00", 8);
  header += static_cast<char>(dict.size() & 0xff);
  header += static_cast<char>(dict.size() >> 8);
  return header + dict;
}

struct Codec {
  std::string name = "zstd";
  int code = BLOSC_ZSTD;
  int clevel = 1;
  bool shuffle = true;
};

int CodecCode(const std::string& name) {
  if (name == "zstd") return BLOSC_ZSTD;
  if (name == "lz4") return BLOSC_LZ4;
  if (name == "lz4hc") return BLOSC_LZ4HC;
  if (name == "blosclz") return BLOSC_BLOSCLZ;
  if (name == "zlib") return BLOSC_ZLIB;
  Die("unknown codec " + name + " (zstd, lz4, lz4hc, blosclz, zlib)");
}

// "a,b,c" as three positive integers.
std::vector<int32_t> ParseTriple(const std::string& text) {
  std::vector<int32_t> v;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find(',', begin), text.size());
    const long n = std::atol(text.substr(begin, end - begin).c_str());
    if (n < 1 || n > (1 << 20)) Die("bad dimension list " + text);
    v.push_back(static_cast<int32_t>(n));
    begin = end + 1;
  }
  if (v.size() != 3) Die("need three dimensions: " + text);
  return v;
}

int WriteB2nd(const std::string& path, const std::vector<int64_t>& shape,
              const std::vector<int32_t>& chunks, const std::vector<int32_t>& blocks,
              const Codec& codec, const void* data, int64_t nbytes) {
  blosc2_remove_urlpath(path.c_str());
  blosc2_cparams cparams = BLOSC2_CPARAMS_DEFAULTS;
  cparams.typesize = 4;
  cparams.compcode = static_cast<uint8_t>(codec.code);
  cparams.clevel = static_cast<uint8_t>(codec.clevel);
  for (auto& f : cparams.filters) f = BLOSC_NOFILTER;
  if (codec.shuffle) cparams.filters[BLOSC2_MAX_FILTERS - 1] = BLOSC_SHUFFLE;
  cparams.nthreads = 2;
  blosc2_storage storage = BLOSC2_STORAGE_DEFAULTS;
  storage.cparams = &cparams;
  storage.contiguous = true;
  storage.urlpath = const_cast<char*>(path.c_str());
  b2nd_context_t* ctx =
      b2nd_create_ctx(&storage, static_cast<int8_t>(shape.size()), shape.data(), chunks.data(),
                      blocks.data(), "<f4", DTYPE_NUMPY_FORMAT, nullptr, 0);
  if (ctx == nullptr) return -1;
  b2nd_array_t* array = nullptr;
  const int rc = b2nd_from_cbuffer(ctx, &array, data, nbytes);
  b2nd_free_ctx(ctx);
  if (rc < 0) return rc;
  b2nd_free(array);
  return 0;
}

template <typename T>
std::string JsonList(const std::vector<T>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

int main(int argc, char** argv) {
  int64_t size_mb = 1024;
  std::string b2nd_path, npy_path, tiny_dir;
  int tiny_count = 0;
  std::vector<int32_t> chunks = {64, 128, 128};
  std::vector<int32_t> blocks = {16, 32, 32};
  Codec codec;
  bool clevel_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die("missing value after " + a);
      return argv[++i];
    };
    if (a == "--size-mb") {
      size_mb = std::atoll(value().c_str());
    } else if (a == "--b2nd") {
      b2nd_path = value();
    } else if (a == "--npy") {
      npy_path = value();
    } else if (a == "--tiny-dir") {
      tiny_dir = value();
    } else if (a == "--tiny-count") {
      tiny_count = std::atoi(value().c_str());
    } else if (a == "--chunks") {
      chunks = ParseTriple(value());
    } else if (a == "--blocks") {
      blocks = ParseTriple(value());
    } else if (a == "--codec") {
      codec.name = value();
      codec.code = CodecCode(codec.name);
    } else if (a == "--clevel") {
      codec.clevel = std::atoi(value().c_str());
      clevel_given = true;
    } else if (a == "--shuffle") {
      codec.shuffle = value() != "0";
    } else {
      Die("unknown argument " + a);
    }
  }
  if (size_mb < 1 || b2nd_path.empty()) {
    Die("usage: bench_make_array --size-mb N --b2nd PATH [--npy PATH] [--tiny-dir D --tiny-count K]"
        " [--chunks C0,C1,C2] [--blocks B0,B1,B2] [--codec NAME] [--clevel L] [--shuffle 0|1]");
  }
  // c-blosc2's own default level for the fast codecs; zstd at 1 as before.
  if (!clevel_given && codec.code != BLOSC_ZSTD) codec.clevel = 5;
  if (codec.clevel < 0 || codec.clevel > 9) Die("clevel must be 0..9");
  for (size_t d = 0; d < 3; ++d) {
    if (blocks[d] > chunks[d]) Die("blocks must fit in chunks");
  }
  blosc2_init();

  const std::vector<int64_t> shape = ShapeFor(size_mb);
  std::vector<float> field;
  const double t0 = bench::Seconds();
  Generate(shape, field);
  const double t1 = bench::Seconds();
  const int64_t nbytes = static_cast<int64_t>(field.size() * sizeof(float));
  if (int rc = WriteB2nd(b2nd_path, shape, chunks, blocks, codec, field.data(), nbytes); rc < 0) {
    Die("c-blosc2 cannot write " + b2nd_path + " (error " + std::to_string(rc) + ")");
  }
  const double t2 = bench::Seconds();
  if (!npy_path.empty()) {
    const std::string header = NpyHeader(shape);
    const int fd = ::open(npy_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) Die("cannot create " + npy_path);
    WriteAll(fd, header.data(), header.size(), npy_path);
    WriteAll(fd, field.data(), static_cast<size_t>(nbytes), npy_path);
    ::close(fd);
  }
  const double t3 = bench::Seconds();
  field.clear();
  field.shrink_to_fit();

  if (!tiny_dir.empty() && tiny_count > 0) {
    ::mkdir(tiny_dir.c_str(), 0755);
    std::vector<float> tiny(64);
    for (size_t i = 0; i < tiny.size(); ++i) tiny[i] = static_cast<float>(i) * 0.5f;
    const std::string first = tiny_dir + "/c00000.b2nd";
    if (WriteB2nd(first, {8, 8}, {8, 8}, {4, 4}, Codec{}, tiny.data(), 256) < 0)
      Die("cannot write " + first);
    std::vector<uint8_t> bytes;
    {
      FILE* f = std::fopen(first.c_str(), "rb");
      if (f == nullptr) Die("cannot read " + first);
      uint8_t buffer[4096];
      size_t n;
      while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0)
        bytes.insert(bytes.end(), buffer, buffer + n);
      std::fclose(f);
    }
    for (int k = 1; k < tiny_count; ++k) {
      char name[32];
      std::snprintf(name, sizeof name, "/c%05d.b2nd", k);
      const std::string path = tiny_dir + name;
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) Die("cannot create " + path);
      WriteAll(fd, bytes.data(), bytes.size(), path);
      ::close(fd);
    }
  }

  struct stat st;
  if (::stat(b2nd_path.c_str(), &st) != 0) Die("cannot stat " + b2nd_path);
  std::printf(
      "{\"shape\": %s, \"chunkshape\": %s, \"blockshape\": %s, "
      "\"dtype\": \"<f4\", \"codec\": \"%s\", \"clevel\": %d, \"filters\": \"%s\", "
      "\"nbytes\": %lld, \"cbytes\": %lld, \"npy_header_bytes\": %zu, \"generate_s\": %.3f, "
      "\"compress_s\": %.3f, \"write_npy_s\": %.3f, \"tiny_count\": %d}\n",
      JsonList(shape).c_str(), JsonList(chunks).c_str(), JsonList(blocks).c_str(),
      codec.name.c_str(), codec.clevel, codec.shuffle ? "shuffle" : "no filter",
      static_cast<long long>(nbytes), static_cast<long long>(st.st_size), NpyHeader(shape).size(),
      t1 - t0, t2 - t1, t3 - t2, tiny_count);
  blosc2_destroy();
  return 0;
}
