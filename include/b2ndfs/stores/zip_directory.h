// stores/zip_directory: the central directory of a ZIP archive (PKWARE
// APPNOTE 6.3: end of central directory record, its ZIP64 locator and
// record, central directory file headers, local file headers), read from
// untrusted bytes, as python-blosc2's .b2z stores need it: where each
// member's bytes lie, so that a stored (uncompressed) member is read in place.
//
// Everything is checked before use: the records must lie inside the file,
// the central directory must hold exactly the entries it claims (bounded:
// kMaxZipMembers, kMaxCentralDirectorySize), member names must be relative
// paths without "." or ".." components, and each member's local header must
// lie before the central directory and must not overlap another member.
// What is wrong with one member (deflated, encrypted, sizes that disagree)
// is that member's `problem`; what is wrong with the archive as a whole is an
// error.
// Errors: Status(EIO) with a message naming what is wrong; a failed read's
// own Status passes on.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "b2ndfs/util/status.h"

namespace b2ndfs::source {
class ByteSource;
}  // namespace b2ndfs::source

namespace b2ndfs::stores {

// python-blosc2's stores hold a member per leaf (a CTable: a few per column):
// these bound what a hostile archive makes the daemon parse and keep.
constexpr int64_t kMaxZipMembers = 1 << 18;
constexpr int64_t kMaxCentralDirectorySize = int64_t{32} << 20;
// The end of central directory record and its longest comment.
constexpr int64_t kZipEndRecordSize = 22;
constexpr int64_t kZipMaxCommentSize = 65535;
constexpr int64_t kZipLocalHeaderSize = 30;

struct ZipMember {
  std::string name;           // as stored ("dir/leaf.b2nd"; directories end with "/")
  int64_t header_offset = 0;  // of its local file header
  int64_t size = 0;           // uncompressed size
  int64_t compressed_size = 0;
  int method = 0;  // 0: stored
  int flags = 0;
  // Where the next member's local header or the central directory begins:
  // the member's bytes must end by then.
  int64_t limit = 0;
  // Non-empty: the member cannot be read in place, and why.
  std::string problem;
};

struct ZipDirectory {
  int64_t central_directory_offset = 0;
  std::vector<ZipMember> members;  // in central directory order
};

// Reads exactly `length` bytes at `offset` of the archive (an error, not a
// short read, past the end).
using ZipReadAt = std::function<Result<std::vector<uint8_t>>(int64_t offset, int64_t length)>;

// Parses the archive's central directory (`file_size` bytes long). Reads the
// tail, the ZIP64 records when present, and the central directory: three
// reads at most. Local headers are not read (LocateMemberData does that).
Result<ZipDirectory> ReadZipDirectory(const ZipReadAt& read, int64_t file_size);

// The same from bytes already in memory: `tail` is the last bytes of the
// archive (at most kZipEndRecordSize + kZipMaxCommentSize are looked at).
// For the fuzz target and unit tests: the whole archive as one buffer.
Result<ZipDirectory> ParseZipArchive(std::span<const uint8_t> archive);

// Where the member's bytes begin: after its local header, whose signature,
// name length and name must agree with the central directory, and whose
// data must end by member.limit. `local` holds at least
// kZipLocalHeaderSize + member.name.size() bytes read at member.header_offset.
Result<int64_t> MemberDataOffset(const ZipMember& member, std::span<const uint8_t> local);

// Each member's data offset (MemberDataOffset), from the local headers of
// `archive` (`size` bytes; source::kFramePart), read in one batch (one round
// trip for a remote source): `data_offsets` gets one per member, -1 where
// there is none. A member whose local header disagrees gets a `problem`; a
// failed read is the archive's trouble, returned.
Status ResolveMemberData(const source::ByteSource& archive, int64_t size, ZipDirectory* zip,
                         std::vector<int64_t>* data_offsets);

}  // namespace b2ndfs::stores
