#include "b2ndfs/util/blosc_names.h"

namespace b2ndfs {
namespace {

constexpr uint8_t kUdcodecFormat = 6;  // BLOSC_UDCODEC_FORMAT

std::string UnnamedId(int id) {
  if (IsUserRegisteredId(id)) return "user-registered:" + std::to_string(id);
  return "id:" + std::to_string(id);
}

}  // namespace

std::string CodecIdName(int id) {
  switch (id) {
    case 0:
      return "blosclz";
    case 1:
      return "lz4";
    case 2:
      return "lz4hc";
    case 3:  // BLOSC_SNAPPY of Blosc1; c-blosc2 dropped it
      return "snappy";
    case 4:
      return "zlib";
    case 5:
      return "zstd";
    case 32:
      return "ndlz";
    case 33:
      return "zfp_acc";
    case 34:
      return "zfp_prec";
    case 35:
      return "zfp_rate";
    case 36:
      return "openhtj2k";
    case 37:
      return "grok";
    case 38:
      return "openzl";
    case 39:
      return "j2k";
    case 40:
      return "htj2k";
    default:
      return UnnamedId(id);
  }
}

std::string CodecName(int codec, uint8_t udcodec) {
  return CodecIdName(codec == kUdcodecFormat ? udcodec : codec);
}

std::string FilterIdName(uint8_t id) {
  switch (id) {
    case 0:
      return "none";
    case 1:
      return "shuffle";
    case 2:
      return "bitshuffle";
    case 3:
      return "delta";
    case 4:
      return "trunc_prec";
    case 32:
      return "ndcell";
    case 33:
      return "ndmean";
    case 34:
      return "bytedelta_buggy";
    case 35:
      return "bytedelta";
    case 36:
      return "int_trunc";
    default:
      return UnnamedId(id);
  }
}

}  // namespace b2ndfs
