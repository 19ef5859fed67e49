#include "b2ndfs/codec/builtin.h"

#include <blosc2.h>
#include <blosc2/codecs-registry.h>
#include <blosc2/filters-registry.h>

#include <array>
#include <vector>

#include "b2ndfs/util/blosc_names.h"

namespace b2ndfs::codec {
namespace {

// The allowlist is written out rather than taken from c-blosc2's headers:
// those also list codecs that c-blosc2 registers without a decoder (and then
// loads), so "known to the header" is not "built in". These asserts tie the
// numbers to the headers of the linked version.
static_assert(BLOSC_BLOSCLZ == 0 && BLOSC_LZ4 == 1 && BLOSC_LZ4HC == 2 && BLOSC_ZLIB == 4 &&
              BLOSC_ZSTD == 5 && BLOSC_LAST_CODEC == 6);
static_assert(BLOSC_BLOSCLZ_FORMAT == 0 && BLOSC_LZ4_FORMAT == 1 && BLOSC_LZ4HC_FORMAT == 1 &&
              BLOSC_ZLIB_FORMAT == 3 && BLOSC_ZSTD_FORMAT == 4 && BLOSC_UDCODEC_FORMAT == 6);
static_assert(BLOSC_CODEC_NDLZ == 32 && BLOSC_CODEC_ZFP_FIXED_ACCURACY == 33 &&
              BLOSC_CODEC_ZFP_FIXED_PRECISION == 34 && BLOSC_CODEC_ZFP_FIXED_RATE == 35 &&
              BLOSC_CODEC_OPENHTJ2K == 36 && BLOSC_CODEC_GROK == 37);
#if BLOSC2_VERSION_MAJOR >= 3
static_assert(BLOSC_CODEC_OPENZL == 38 && BLOSC_CODEC_J2K == 39 && BLOSC_CODEC_HTJ2K == 40);
#endif
static_assert(BLOSC_NOFILTER == 0 && BLOSC_SHUFFLE == 1 && BLOSC_BITSHUFFLE == 2 &&
              BLOSC_DELTA == 3 && BLOSC_TRUNC_PREC == 4 && BLOSC_LAST_FILTER == 5);
static_assert(BLOSC_FILTER_NDCELL == 32 && BLOSC_FILTER_NDMEAN == 33 &&
              BLOSC_FILTER_BYTEDELTA_BUGGY == 34 && BLOSC_FILTER_BYTEDELTA == 35 &&
              BLOSC_FILTER_INT_TRUNC == 36);
// c-blosc2 2.17 and 3.3 register exactly these five filters, all with their
// code; a sixth would need a look at whether it comes with a decoder.
static_assert(BLOSC2_GLOBAL_REGISTERED_FILTERS == 5);
static_assert(BLOSC2_USER_REGISTERED_CODECS_START == 160 &&
              BLOSC2_USER_REGISTERED_FILTERS_START == 160);
static_assert(BLOSC_EXTENDED_HEADER_LENGTH == 32 && BLOSC_MIN_HEADER_LENGTH == 16 &&
              BLOSC2_MAX_FILTERS == 6);

// Chunk header bytes (README_CHUNK_FORMAT.rst; blosc_header in blosc2.c).
constexpr size_t kVersionByte = 0;
constexpr size_t kChunkFlagsByte = 2;
constexpr size_t kChunkFiltersByte = 16;
constexpr size_t kChunkUdcodecByte = 22;  // right after the six filter ids
static_assert(BLOSC2_CHUNK_VERSION == kVersionByte && BLOSC2_CHUNK_FLAGS == kChunkFlagsByte &&
              BLOSC2_CHUNK_FILTER_CODES == kChunkFiltersByte &&
              static_cast<int>(BLOSC2_CHUNK_FILTER_CODES) + BLOSC2_MAX_FILTERS ==
                  kChunkUdcodecByte &&
              BLOSC2_CHUNK_FILTER_META == kChunkUdcodecByte + 2);
constexpr uint8_t kChunkAlphaFormat = 3;  // BLOSC2_VERSION_FORMAT_ALPHA: 5 filters

constexpr const char* kChunk = "the chunk";
constexpr const char* kFrameHeader = "the frame header";

bool IsBuiltinCodec(int compcode) {
  switch (compcode) {
    case BLOSC_BLOSCLZ:
    case BLOSC_LZ4:
    case BLOSC_LZ4HC:
    case BLOSC_ZLIB:
    case BLOSC_ZSTD:
    case BLOSC_CODEC_NDLZ:
    case BLOSC_CODEC_ZFP_FIXED_ACCURACY:
    case BLOSC_CODEC_ZFP_FIXED_PRECISION:
    case BLOSC_CODEC_ZFP_FIXED_RATE:
      return true;
    default:
      return false;
  }
}

bool IsBuiltinFilter(uint8_t id) {
  return id <= BLOSC_TRUNC_PREC || (id >= BLOSC_FILTER_NDCELL && id <= BLOSC_FILTER_INT_TRUNC);
}

// Codecs that c-blosc2 knows by name only and loads as blosc2_<name>.
bool IsPluginCodec(int compcode) { return compcode >= 36 && compcode <= 40; }

// "grok (id 37)", or "id 41" for ids without a name.
std::string Label(const std::string& name, int id) {
  if (name.rfind("id:", 0) == 0 || name.rfind("user-registered:", 0) == 0) {
    return "id " + std::to_string(id);
  }
  return name + " (id " + std::to_string(id) + ")";
}

// An id that no c-blosc2 release and no plugin writes: a filter or codec
// byte that was changed after writing (blosc2 chunks carry no checksum, so
// this is one of the few places damage shows), not a missing plugin.
std::string Damaged(const char* whole, const std::string& label, const char* known) {
  return std::string(whole) + " is damaged: it names " + label + ", which c-blosc2 " +
         LibraryVersion() + " never writes and no plugin may use (" + known + ")";
}

constexpr int kSnappy = 3;  // BLOSC_SNAPPY of Blosc1

std::string CodecWords(int compcode, const char* whole) {
  const std::string name = CodecIdName(compcode);
  const std::string label = "codec " + Label(name, compcode);
  if (IsPluginCodec(compcode)) {
    return label + " needs the external plugin blosc2_" + name + ", which b2ndfs never loads";
  }
  if (IsUserRegisteredId(compcode)) {
    return label +
           " is a user-registered codec; it needs an external plugin, which b2ndfs never loads";
  }
  if (compcode == kSnappy) {
    // Blosc1 wrote it; c-blosc2 dropped its decoder.
    return label + " is not built into c-blosc2 " + LibraryVersion();
  }
  return Damaged(whole, label, "c-blosc2's codecs are 0-5 and 32-40, plugins' 160-255");
}

std::string FilterWords(uint8_t id, const char* whole) {
  const std::string label = "filter " + Label(FilterIdName(id), id);
  if (IsUserRegisteredId(id)) {
    return label +
           " is a user-registered filter; it needs an external plugin, which b2ndfs never loads";
  }
  return Damaged(whole, label, "c-blosc2's filters are 0-4 and 32-36, plugins' 160-255");
}

// Collects findings once each, in order.
class Findings {
 public:
  void Add(std::string words) {
    for (const auto& w : words_) {
      if (w == words) return;
    }
    words_.push_back(std::move(words));
  }
  std::optional<std::string> Joined() const {
    if (words_.empty()) return std::nullopt;
    std::string out;
    for (const auto& w : words_) {
      if (!out.empty()) out += "; ";
      out += w;
    }
    return out;
  }

 private:
  std::vector<std::string> words_;
};

// `whole`: what an impossible id shows to be damaged ("the chunk").
void CheckFilters(std::span<const uint8_t> filters, const char* whole, Findings* findings) {
  for (uint8_t id : filters) {
    if (!IsBuiltinFilter(id)) findings->Add(FilterWords(id, whole));
  }
}

}  // namespace

std::string LibraryVersion() {
  const char* version = blosc2_get_version_string();
  return version != nullptr ? version : BLOSC2_VERSION_STRING;
}

std::optional<std::string> UnsupportedPipeline(int compcode, uint8_t udcodec,
                                               std::span<const uint8_t> filters) {
  Findings findings;
  // As frame.c reads a frame: codec nibble 6 (BLOSC_UDCODEC_FORMAT) means the
  // codec id is the udcodec byte, any id, built-in ones included.
  const int codec = compcode == BLOSC_UDCODEC_FORMAT ? udcodec : compcode;
  if (!IsBuiltinCodec(codec)) findings.Add(CodecWords(codec, kFrameHeader));
  CheckFilters(filters, kFrameHeader, &findings);
  return findings.Joined();
}

Status CheckChunkPipeline(std::span<const uint8_t> header) {
  if (header.size() < static_cast<size_t>(BLOSC_MIN_HEADER_LENGTH)) {
    return InvalidData("chunk header is " + std::to_string(header.size()) +
                       " bytes, too short to say which codec it needs");
  }
  // read_chunk_header(): the extended header exists exactly when both shuffle
  // flags are set; otherwise the filters come from the flags (shuffle,
  // bitshuffle, delta: all built in) and the user-defined codec byte is 0.
  const uint8_t flags = header[kChunkFlagsByte];
  const bool extended = (flags & BLOSC_DOSHUFFLE) && (flags & BLOSC_DOBITSHUFFLE);
  std::array<uint8_t, BLOSC2_MAX_FILTERS> filters{};
  uint8_t udcodec = 0;
  if (extended) {
    if (header.size() < static_cast<size_t>(BLOSC_EXTENDED_HEADER_LENGTH)) {
      return InvalidData("chunk's extended header is truncated (" + std::to_string(header.size()) +
                         " bytes), so the codec it needs is unknown");
    }
    for (size_t i = 0; i < filters.size(); ++i) filters[i] = header[kChunkFiltersByte + i];
    udcodec = header[kChunkUdcodecByte];
    if (header[kVersionByte] == kChunkAlphaFormat) filters[5] = 0;  // as c-blosc2 does
  }
  Findings findings;
  // blosc_d() picks the codec from the compformat bits alone; only format 6
  // consults the codec byte, and then only among registered codecs (ids 32
  // and up), whose decoders may be plugins.
  const int compformat = flags >> 5;
  switch (compformat) {
    case BLOSC_BLOSCLZ_FORMAT:
    case BLOSC_LZ4_FORMAT:
    case BLOSC_ZLIB_FORMAT:
    case BLOSC_ZSTD_FORMAT:
      break;
    case BLOSC_UDCODEC_FORMAT:
      if (udcodec < BLOSC2_GLOBAL_REGISTERED_CODECS_START) {
        findings.Add(std::string(kChunk) + " is damaged: it names codec " +
                     Label(CodecIdName(udcodec), udcodec) +
                     " in its user-defined codec slot, where c-blosc2 only writes registered "
                     "codecs (ids 32 and up)");
      } else if (!IsBuiltinCodec(udcodec)) {
        findings.Add(CodecWords(udcodec, kChunk));
      }
      break;
    case 2:
      findings.Add("chunk codec format 2 (snappy) is not built into c-blosc2 " + LibraryVersion());
      break;
    case 7:
      findings.Add("chunk codec format 7 (codec kept in the super-chunk) is not supported");
      break;
    default:
      findings.Add(std::string(kChunk) + " is damaged: its codec format " +
                   std::to_string(compformat) + " is reserved (c-blosc2 never writes it)");
      break;
  }
  CheckFilters(filters, kChunk, &findings);
  if (auto words = findings.Joined()) return InvalidData(std::move(*words));
  return Status::Ok();
}

}  // namespace b2ndfs::codec
