// fuzz_corpus_tool: turns container sets into seed inputs for the fuzz
// targets, and sparse packs back into directories.
//
//   fuzz_corpus_tool prepare OUTDIR PATH...
//     For every container below each PATH (a file with a container extension,
//     or a sparse-frame directory holding chunks.b2frame):
//       OUTDIR/metalayer/  its metalayers' contents, its vlmetalayers'
//                          decompressed contents and its dtype string
//       OUTDIR/container/  sparse-frame directories as sparse packs
//                          (fuzz_common.h), so that fuzz_container sees them
//     Files are named by a hash of their content (duplicates collapse).
//   fuzz_corpus_tool pack-sparse DIR OUTFILE      one sparse directory -> pack
//   fuzz_corpus_tool unpack-sparse PACK DIR       a pack -> directory (to
//                                                 reproduce with b2ndfs-inspect)
// Seeds only need to be interesting, not right: this tool uses the b2ndfs
// format decoder to find the metalayers.
// Exit status: 0 on success, 1 on errors, 2 on usage.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "b2ndfs/codec/decompressor.h"
#include "b2ndfs/format/frame.h"
#include "b2ndfs/format/ndmeta.h"
#include "b2ndfs/source/byte_source.h"
#include "fuzz_common.h"

namespace b2ndfs::fuzz {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

constexpr size_t kMaxSparseChunks = 63;  // fuzz_container unpacks 64 records

std::optional<Bytes> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool WriteFile(const fs::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

std::string HashName(const Bytes& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (uint8_t b : bytes) h = (h ^ b) * 1099511628211ull;
  char name[32];
  std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(h));
  return name;
}

bool IsContainerName(const fs::path& path) {
  static const char* kExtensions[] = {".b2nd", ".b2frame", ".b2f", ".b2", ".caterva", ".cat"};
  const std::string ext = path.extension().string();
  return std::any_of(std::begin(kExtensions), std::end(kExtensions),
                     [&](const char* e) { return ext == e; });
}

class Preparer {
 public:
  explicit Preparer(fs::path out) : out_(std::move(out)) {
    fs::create_directories(out_ / "metalayer");
    fs::create_directories(out_ / "container");
  }

  void Seed(const std::string& target, const Bytes& bytes) {
    if (WriteFile(out_ / target / HashName(bytes), bytes)) ++written_;
  }

  // Metalayers, vlmetalayers (decompressed) and dtype of one frame file.
  void Frame(const Bytes& frame_bytes) {
    const auto size = static_cast<int64_t>(frame_bytes.size());
    format::ReadAt read = [&](int64_t offset, int64_t length) -> Result<Bytes> {
      if (offset < 0 || length < 0 || offset > size || length > size - offset) {
        return Status(EIO, "past the end");
      }
      return Bytes(frame_bytes.begin() + offset, frame_bytes.begin() + offset + length);
    };
    auto frame = format::ParseFrame(read, size);
    if (!frame.ok()) return;
    for (const auto& m : frame->metalayers) {
      Seed("metalayer", m.content);
      if (m.name == "b2nd") {
        auto nd = format::DecodeB2ndMetalayer(m.content);
        if (nd.ok() && nd->dtype) Seed("metalayer", Bytes(nd->dtype->begin(), nd->dtype->end()));
      }
    }
    for (const auto& vl : frame->vlmetalayers) {
      auto info = codec::InspectChunk(vl.content);
      if (!info.ok() || info->nbytes > (1 << 20)) continue;
      Bytes out(static_cast<size_t>(info->nbytes));
      if (decompressor_.DecompressAll(vl.content, out).ok()) Seed("metalayer", out);
    }
  }

  bool Sparse(const fs::path& dir) {
    auto pack = PackDirectory(dir);
    if (!pack) return false;
    Seed("container", *pack);
    return true;
  }

  static std::optional<Bytes> PackDirectory(const fs::path& dir) {
    std::vector<std::optional<Bytes>> records(1);
    if (auto index = ReadFile(dir / "chunks.b2frame")) records[0] = std::move(*index);
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (name.size() != 14 || !name.ends_with(".chunk")) continue;
      const unsigned long n = std::strtoul(name.substr(0, 8).c_str(), nullptr, 16);
      if (n >= kMaxSparseChunks) continue;
      if (records.size() < n + 2) records.resize(n + 2);
      records[n + 1] = ReadFile(e.path());
    }
    if (ec) return std::nullopt;
    return PackSparse(records);
  }

  int written() const { return written_; }

 private:
  fs::path out_;
  codec::Decompressor decompressor_;
  int written_ = 0;
};

int Prepare(const fs::path& out, const std::vector<fs::path>& inputs) {
  Preparer preparer(out);
  int containers = 0;
  for (const fs::path& input : inputs) {
    std::error_code ec;
    if (!fs::exists(input, ec)) {
      std::fprintf(stderr, "fuzz_corpus_tool: %s does not exist\n", input.c_str());
      return 1;
    }
    std::vector<fs::path> paths{input};
    if (fs::is_directory(input)) {
      for (auto it = fs::recursive_directory_iterator(input, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        paths.push_back(it->path());
      }
    }
    std::sort(paths.begin(), paths.end());
    for (const fs::path& p : paths) {
      if (fs::is_directory(p) && fs::exists(p / "chunks.b2frame")) {
        if (preparer.Sparse(p)) ++containers;
        if (auto index = ReadFile(p / "chunks.b2frame")) preparer.Frame(*index);
      } else if (fs::is_regular_file(p) && IsContainerName(p) && p.filename() != "chunks.b2frame") {
        if (auto bytes = ReadFile(p)) {
          preparer.Frame(*bytes);
          ++containers;
        }
      }
    }
  }
  std::printf("fuzz_corpus_tool: %d containers, %d seeds written below %s\n", containers,
              preparer.written(), out.c_str());
  return containers > 0 ? 0 : 1;
}

int UnpackToDirectory(const fs::path& pack_path, const fs::path& dir) {
  auto pack = ReadFile(pack_path);
  if (!pack || !IsSparsePack(*pack)) {
    std::fprintf(stderr, "fuzz_corpus_tool: %s is not a sparse pack\n", pack_path.c_str());
    return 1;
  }
  fs::create_directories(dir);
  const auto records = UnpackSparse(*pack, kMaxSparseChunks + 1);
  for (size_t i = 0; i < records.size(); ++i) {
    if (!records[i].present) continue;
    const std::string name =
        i == 0 ? "chunks.b2frame" : source::SparseChunkFileName(static_cast<int64_t>(i - 1));
    if (!WriteFile(dir / name, Bytes(records[i].bytes.begin(), records[i].bytes.end()))) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace b2ndfs::fuzz

int main(int argc, char** argv) {
  using namespace b2ndfs::fuzz;  // NOLINT
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() >= 3 && args[0] == "prepare") {
    return Prepare(args[1], std::vector<std::filesystem::path>(args.begin() + 2, args.end()));
  }
  if (args.size() == 3 && args[0] == "pack-sparse") {
    auto pack = Preparer::PackDirectory(args[1]);
    return pack && WriteFile(args[2], *pack) ? 0 : 1;
  }
  if (args.size() == 3 && args[0] == "unpack-sparse") return UnpackToDirectory(args[1], args[2]);
  std::fprintf(stderr,
               "usage:\n  fuzz_corpus_tool prepare OUTDIR PATH...\n"
               "  fuzz_corpus_tool pack-sparse DIR OUTFILE\n"
               "  fuzz_corpus_tool unpack-sparse PACK DIR\n");
  return 2;
}
