// b2ndfs-make-samples: writes a small, realistic set of b2nd containers with
// c-blosc2's own API, for the demo (scripts/demo.sh) and the benchmark.
//
//   b2ndfs-make-samples OUTDIR [--scale N]
//
// OUTDIR/climate/temperature.b2nd   float32 (days, lat, lon) smooth field + noise,
//                                   with voxel geometry in its vlmeta (spacing,
//                                   origin, units, _ARRAY_DIMENSIONS; README.md,
//                                   "Headers, axes and voxel geometry")
// OUTDIR/images/mandelbrot.b2nd     uint8 2-D image (view a slice of it as raw gray)
// OUTDIR/series/counts.b2nd         int64 1-D counter series
// OUTDIR/README.txt                 an ordinary sidecar file
#include <b2nd.h>
#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

int Write(const std::string& path, const std::vector<int64_t>& shape,
          const std::vector<int32_t>& chunks, const std::vector<int32_t>& blocks, int typesize,
          const char* dtype, const void* data, int64_t nbytes) {
  blosc2_remove_urlpath(path.c_str());
  blosc2_cparams cparams = BLOSC2_CPARAMS_DEFAULTS;
  cparams.typesize = typesize;
  cparams.compcode = BLOSC_ZSTD;
  cparams.clevel = 5;
  cparams.nthreads = 2;
  blosc2_storage storage = BLOSC2_STORAGE_DEFAULTS;
  storage.cparams = &cparams;
  storage.contiguous = true;
  storage.urlpath = const_cast<char*>(path.c_str());
  b2nd_context_t* ctx =
      b2nd_create_ctx(&storage, static_cast<int8_t>(shape.size()), shape.data(), chunks.data(),
                      blocks.data(), dtype, DTYPE_NUMPY_FORMAT, nullptr, 0);
  if (ctx == nullptr) return 1;
  b2nd_array_t* array = nullptr;
  int rc = b2nd_from_cbuffer(ctx, &array, data, nbytes);
  b2nd_free_ctx(ctx);
  if (rc < 0) return 1;
  b2nd_free(array);
  std::printf("wrote %s\n", path.c_str());
  return 0;
}

// msgpack, as python-blosc2 packs `a.vlmeta[name] = [...]`: an array of
// float64 or of str.
std::vector<uint8_t> PackList(const std::vector<double>& numbers,
                              const std::vector<std::string>& words) {
  const size_t n = numbers.size() + words.size();
  std::vector<uint8_t> out{static_cast<uint8_t>(0x90 | n)};  // fixarray (n < 16)
  for (double v : numbers) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    out.push_back(0xcb);
    for (int i = 7; i >= 0; --i) out.push_back(static_cast<uint8_t>(bits >> (8 * i)));
  }
  for (const std::string& w : words) {
    out.push_back(static_cast<uint8_t>(0xa0 | w.size()));  // fixstr (< 32 bytes)
    out.insert(out.end(), w.begin(), w.end());
  }
  return out;
}

// Adds vlmetalayers to the container at `path`.
int AddVlmeta(const std::string& path,
              const std::vector<std::pair<const char*, std::vector<uint8_t>>>& layers) {
  blosc2_schunk* sc = blosc2_schunk_open(path.c_str());
  if (sc == nullptr) return 1;
  int failures = 0;
  for (const auto& [name, content] : layers) {
    std::vector<uint8_t> bytes = content;
    if (blosc2_vlmeta_add(sc, name, bytes.data(), static_cast<int32_t>(bytes.size()), nullptr) <
        0) {
      failures = 1;
    }
  }
  blosc2_schunk_free(sc);
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  constexpr const char* kUsage = "usage: b2ndfs-make-samples OUTDIR [--scale N]\n";
  if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  // An option is never taken for OUTDIR (it would become a directory).
  if (argc < 2 || argv[1][0] == '-') {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string out = argv[1];
  int scale = 1;
  if (argc > 2) {
    // Each unit of scale is 90 more days of the climate field (23 MB).
    constexpr long kMaxScale = 1000;
    if (argc != 4 || std::strcmp(argv[2], "--scale") != 0) {
      std::fprintf(stderr, "b2ndfs-make-samples: unexpected arguments after OUTDIR\n%s", kUsage);
      return 2;
    }
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(argv[3], &end, 10);
    if (!std::isdigit(static_cast<unsigned char>(argv[3][0])) || *end != '\0' || errno != 0 ||
        n < 1 || n > kMaxScale) {
      std::fprintf(stderr,
                   "b2ndfs-make-samples: bad --scale '%s': expected a whole number from 1 to "
                   "%ld\n",
                   argv[3], kMaxScale);
      return 2;
    }
    scale = static_cast<int>(n);
  }
  blosc2_init();
  for (const char* sub : {"", "/climate", "/images", "/series"}) {
    ::mkdir((out + sub).c_str(), 0755);
  }
  int failures = 0;
  {
    const int64_t days = 90 * scale, lat = 180, lon = 360;
    std::vector<float> field(static_cast<size_t>(days * lat * lon));
    std::mt19937 rng(42);
    std::normal_distribution<float> noise(0.0f, 0.3f);
    size_t i = 0;
    for (int64_t d = 0; d < days; ++d) {
      for (int64_t y = 0; y < lat; ++y) {
        for (int64_t x = 0; x < lon; ++x) {
          const double season = std::sin(2 * M_PI * static_cast<double>(d) / 365.0);
          const double latitude = (static_cast<double>(y) - 90.0) / 90.0;
          field[i++] =
              static_cast<float>(15.0 - 30.0 * latitude * latitude + 10.0 * season * latitude +
                                 3.0 * std::cos(static_cast<double>(x) / 20.0)) +
              noise(rng);
        }
      }
    }
    const std::string path = out + "/climate/temperature.b2nd";
    failures += Write(path, {days, lat, lon}, {30, 60, 120}, {10, 20, 40}, 4, "<f4", field.data(),
                      static_cast<int64_t>(field.size() * sizeof(float)));
    // One sample a day on a 1-degree grid whose first cell is centred at
    // (-89.5, -179.5): what the imaging headers show as spacing and origin.
    failures += AddVlmeta(path, {{"spacing", PackList({1.0, 1.0, 1.0}, {})},
                                 {"origin", PackList({0.0, -89.5, -179.5}, {})},
                                 {"units", PackList({}, {"day", "degree", "degree"})},
                                 {"_ARRAY_DIMENSIONS", PackList({}, {"time", "lat", "lon"})}});
  }
  {
    const int64_t h = 768, w = 1024;
    std::vector<uint8_t> image(static_cast<size_t>(h * w));
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        double cr = -2.2 + 3.2 * static_cast<double>(x) / static_cast<double>(w);
        double ci = -1.2 + 2.4 * static_cast<double>(y) / static_cast<double>(h);
        double zr = 0, zi = 0;
        int n = 0;
        while (n < 255 && zr * zr + zi * zi < 4) {
          double t = zr * zr - zi * zi + cr;
          zi = 2 * zr * zi + ci;
          zr = t;
          ++n;
        }
        image[static_cast<size_t>(y * w + x)] = static_cast<uint8_t>(n);
      }
    }
    failures += Write(out + "/images/mandelbrot.b2nd", {h, w}, {256, 256}, {64, 64}, 1, "|u1",
                      image.data(), static_cast<int64_t>(image.size()));
  }
  {
    const int64_t n = 1000000;
    std::vector<int64_t> counts(static_cast<size_t>(n));
    int64_t total = 0;
    for (int64_t k = 0; k < n; ++k) counts[static_cast<size_t>(k)] = (total += k % 7);
    failures += Write(out + "/series/counts.b2nd", {n}, {100000}, {10000}, 8, "<i8", counts.data(),
                      static_cast<int64_t>(counts.size() * 8));
  }
  if (FILE* f = std::fopen((out + "/README.txt").c_str(), "w")) {
    std::fputs("Sample Blosc2 b2nd containers written by b2ndfs-make-samples.\n", f);
    std::fclose(f);
  }
  blosc2_destroy();
  return failures == 0 ? 0 : 1;
}
