/* make_compat: writes the c-blosc2 2.17 compatibility containers in this
 * directory and their MANIFEST. It is NOT built by the project (b2ndfs links
 * c-blosc2 >= 3.3); it was compiled once against Debian trixie's
 * libblosc2-dev 2.17.1 and run here, and its output is committed, as
 * c-blosc2 keeps its own compat/ files:
 *
 *   cc -O1 -o /tmp/make_compat make_compat.c -I$PREFIX/usr/include \
 *      $PREFIX/usr/lib/x86_64-linux-gnu/libblosc2.a -llz4 -lzstd -lz -lpthread -lm -ldl
 *   (cd tests/compat && /tmp/make_compat)
 *
 * MANIFEST: one line per container, TAB-separated:
 *   name  expect  sha256  description
 * expect is "data": c-blosc2 2.17.1 read the whole array back as bytes whose
 * SHA-256 is sha256 (and they equal what was written). Data are
 * deterministic. */
#include <blosc2.h>
#include <b2nd.h>
#include <blosc2/filters-registry.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char* what, int rc) {
  fprintf(stderr, "make_compat: %s failed (%d)\n", what, rc);
  exit(1);
}

/* FIPS 180-4 SHA-256, small and slow: enough for these few KiB. */
typedef struct { uint32_t h[8]; uint8_t block[64]; size_t used; uint64_t total; } Sha;
static const uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))
static void ShaBlock(Sha* s) {
  uint32_t w[64], a[8];
  for (int i = 0; i < 16; ++i)
    w[i] = (uint32_t)s->block[4 * i] << 24 | (uint32_t)s->block[4 * i + 1] << 16 |
           (uint32_t)s->block[4 * i + 2] << 8 | s->block[4 * i + 3];
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  memcpy(a, s->h, sizeof a);
  for (int i = 0; i < 64; ++i) {
    uint32_t t1 = a[7] + (ROR(a[4], 6) ^ ROR(a[4], 11) ^ ROR(a[4], 25)) +
                  ((a[4] & a[5]) ^ (~a[4] & a[6])) + kK[i] + w[i];
    uint32_t t2 = (ROR(a[0], 2) ^ ROR(a[0], 13) ^ ROR(a[0], 22)) +
                  ((a[0] & a[1]) ^ (a[0] & a[2]) ^ (a[1] & a[2]));
    memmove(a + 1, a, 7 * sizeof(uint32_t));
    a[4] += t1;
    a[0] = t1 + t2;
  }
  for (int i = 0; i < 8; ++i) s->h[i] += a[i];
}
static void ShaHex(const uint8_t* p, size_t n, char out[65]) {
  Sha s = {{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
            0x5be0cd19}, {0}, 0, 0};
  for (size_t i = 0; i < n; ++i) {
    s.block[s.used++] = p[i];
    if (s.used == 64) { ShaBlock(&s); s.used = 0; }
  }
  s.total = (uint64_t)n * 8;
  s.block[s.used++] = 0x80;
  if (s.used > 56) { while (s.used < 64) s.block[s.used++] = 0; ShaBlock(&s); s.used = 0; }
  while (s.used < 56) s.block[s.used++] = 0;
  for (int i = 7; i >= 0; --i) s.block[s.used++] = (uint8_t)(s.total >> (8 * i));
  ShaBlock(&s);
  for (int i = 0; i < 8; ++i) sprintf(out + 8 * i, "%08x", s.h[i]);
}

typedef struct {
  const char* name;
  const char* dtype;
  int typesize;
  int ndim;
  int64_t shape[4];
  int32_t chunks[4];
  int32_t blocks[4];
  int codec;
  uint8_t filters[2];  /* applied in this order, into the last two slots */
  int use_dict;
  int contiguous;
  unsigned noise; /* added to each value: x % noise, for x pseudo-random */
  const char* expect;
  const char* what;
} Spec;

/* Smooth, compressible values with some noise, in the item type. */
static void Fill(const Spec* s, uint8_t* buf, int64_t n) {
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int64_t i = 0; i < n; ++i) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    double v = round(1000.0 * sin((double)i / 97.0)) + (double)(x % s->noise);
    if (!strcmp(s->dtype, "<f8")) { double d = v; memcpy(buf + 8 * i, &d, 8); }
    else if (!strcmp(s->dtype, "<f4")) { float f = (float)v; memcpy(buf + 4 * i, &f, 4); }
    else if (!strcmp(s->dtype, "<i4")) { int32_t k = (int32_t)v; memcpy(buf + 4 * i, &k, 4); }
    else if (!strcmp(s->dtype, "<u2")) { uint16_t k = (uint16_t)(v + 2000); memcpy(buf + 2 * i, &k, 2); }
    else if (!strcmp(s->dtype, "|u1")) { buf[i] = (uint8_t)((int)v & 0xff); }
    else { fprintf(stderr, "dtype %s\n", s->dtype); exit(1); }
  }
}

static void Write(const Spec* s, FILE* manifest) {
  int64_t n = 1;
  for (int i = 0; i < s->ndim; ++i) n *= s->shape[i];
  const int64_t size = n * s->typesize;
  uint8_t* data = malloc((size_t)size);
  uint8_t* back = malloc((size_t)size);
  Fill(s, data, n);
  blosc2_cparams cp = BLOSC2_CPARAMS_DEFAULTS;
  cp.compcode = (uint8_t)s->codec;
  cp.clevel = 5;
  cp.typesize = s->typesize;
  cp.nthreads = 1;
  cp.use_dict = s->use_dict;
  for (int i = 0; i < BLOSC2_MAX_FILTERS; ++i) cp.filters[i] = 0;
  cp.filters[BLOSC2_MAX_FILTERS - 2] = s->filters[0];
  cp.filters[BLOSC2_MAX_FILTERS - 1] = s->filters[1];
  blosc2_dparams dp = BLOSC2_DPARAMS_DEFAULTS;
  dp.nthreads = 1;
  blosc2_storage st = BLOSC2_STORAGE_DEFAULTS;
  st.contiguous = s->contiguous;
  st.urlpath = (char*)s->name;
  st.cparams = &cp;
  st.dparams = &dp;
  blosc2_remove_urlpath(s->name);
  b2nd_context_t* ctx = b2nd_create_ctx(&st, (int8_t)s->ndim, s->shape, s->chunks, s->blocks,
                                        s->dtype, DTYPE_NUMPY_FORMAT, NULL, 0);
  if (ctx == NULL) die("b2nd_create_ctx", -1);
  b2nd_array_t* arr = NULL;
  int rc = b2nd_from_cbuffer(ctx, &arr, data, size);
  if (rc < 0) die(s->name, rc);
  b2nd_free(arr);
  arr = NULL;
  /* What 2.17.1 reads back from the file (a contiguous frame from memory:
   * 2.17's lazy chunks of a file-backed frame lose their dictionary). */
  uint8_t* frame = NULL;
  if (s->contiguous) {
    FILE* f = fopen(s->name, "rb");
    if (f == NULL) die("fopen", -1);
    fseek(f, 0, SEEK_END);
    const long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    frame = malloc((size_t)len);
    if (fread(frame, 1, (size_t)len, f) != (size_t)len) die("fread", -1);
    fclose(f);
    rc = b2nd_from_cframe(frame, len, false, &arr);
  } else {
    rc = b2nd_open(s->name, &arr);
  }
  if (rc < 0) die("b2nd_open", rc);
  rc = b2nd_to_cbuffer(arr, back, size);
  if (rc < 0) die("b2nd_to_cbuffer", rc);
  if (memcmp(back, data, (size_t)size) != 0) die("round trip", 0);
  char hex[65];
  ShaHex(back, (size_t)size, hex);
  fprintf(manifest, "%s\t%s\t%s\t%s\n", s->name, s->expect, hex, s->what);
  b2nd_free(arr);
  b2nd_free_ctx(ctx);
  free(frame);
  free(data);
  free(back);
}

int main(void) {
  blosc2_init();
  const Spec specs[] = {
      {"217_i4_zstd_shuffle.b2nd", "<i4", 4, 2, {60, 45}, {25, 20}, {10, 7}, BLOSC_ZSTD,
       {0, BLOSC_SHUFFLE}, 0, 1, 16, "data", "2-D int32, zstd + shuffle"},
      {"217_f8_lz4_bitshuffle.b2nd", "<f8", 8, 3, {13, 17, 11}, {5, 8, 6}, {2, 3, 4}, BLOSC_LZ4,
       {0, BLOSC_BITSHUFFLE}, 0, 0, 16, "data", "3-D float64, lz4 + bitshuffle, sparse frame"},
      {"217_u2_blosclz_delta.b2nd", "<u2", 2, 1, {3000}, {1000}, {250}, BLOSC_BLOSCLZ,
       {0, BLOSC_DELTA}, 0, 1, 16, "data", "1-D uint16, blosclz + delta alone"},
      {"217_f4_zstd_bytedelta.b2nd", "<f4", 4, 2, {40, 50}, {16, 25}, {8, 5}, BLOSC_ZSTD,
       {BLOSC_SHUFFLE, BLOSC_FILTER_BYTEDELTA}, 0, 1, 16, "data", "2-D float32, shuffle then bytedelta"},
      {"217_i4_zstd_dict.b2nd", "<i4", 4, 2, {64, 64}, {32, 64}, {8, 16}, BLOSC_ZSTD,
       {0, BLOSC_SHUFFLE}, 1, 1, 16, "data", "2-D int32, zstd with a small dictionary"},
      {"217_u1_lz4hc.b2nd", "|u1", 1, 4, {5, 6, 7, 8}, {3, 4, 5, 6}, {2, 2, 3, 3}, BLOSC_LZ4HC,
       {0, 0}, 0, 1, 16, "data", "4-D uint8, lz4hc, no filter"},
  };
  FILE* manifest = fopen("MANIFEST", "w");
  if (manifest == NULL) die("MANIFEST", -1);
  fprintf(manifest, "# Written by make_compat.c with c-blosc2 %s\n", BLOSC2_VERSION_STRING);
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; ++i) Write(&specs[i], manifest);
  fclose(manifest);
  blosc2_destroy();
  return 0;
}
