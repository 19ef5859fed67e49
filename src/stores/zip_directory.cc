// ZIP central directory parsing (PKWARE APPNOTE 6.3, sections 4.3.7 local
// file header, 4.3.12 central directory header, 4.3.14-4.3.16 ZIP64 end of
// central directory record and locator, end of central directory record;
// 4.5.3 the ZIP64 extended information extra field). Python's zipfile, which
// writes python-blosc2's .b2z stores (dict_store.py, DictStore.to_b2z),
// writes the ZIP64 records when an archive holds 0xFFFF members or more, or
// when the central directory's offset or size passes 2^31 - 1 (its
// ZIP64_LIMIT), and a member's ZIP64 extra field when its size or header
// offset passes that limit.
#include "b2ndfs/stores/zip_directory.h"

#include <algorithm>
#include <map>

#include "b2ndfs/source/byte_source.h"
#include "b2ndfs/util/checked_math.h"

namespace b2ndfs::stores {
namespace {

// Record signatures, "PK" and two bytes, read little-endian (APPNOTE 4.3).
constexpr uint32_t kLocalSignature = 0x04034b50;         // PK\3\4
constexpr uint32_t kCentralSignature = 0x02014b50;       // PK\1\2
constexpr uint32_t kEndSignature = 0x06054b50;           // PK\5\6
constexpr uint32_t kZip64EndSignature = 0x06064b50;      // PK\6\6
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;  // PK\6\7
constexpr int64_t kCentralHeaderSize = 46;
constexpr int64_t kZip64LocatorSize = 20;
constexpr int64_t kZip64EndSize = 56;

uint16_t U16(std::span<const uint8_t> b, size_t at) {
  return static_cast<uint16_t>(b[at] | (b[at + 1] << 8));
}
uint32_t U32(std::span<const uint8_t> b, size_t at) {
  return static_cast<uint32_t>(b[at]) | (static_cast<uint32_t>(b[at + 1]) << 8) |
         (static_cast<uint32_t>(b[at + 2]) << 16) | (static_cast<uint32_t>(b[at + 3]) << 24);
}
uint64_t U64(std::span<const uint8_t> b, size_t at) {
  return static_cast<uint64_t>(U32(b, at)) | (static_cast<uint64_t>(U32(b, at + 4)) << 32);
}

Status BadZip(const std::string& what) { return InvalidData("zip archive: " + what); }

// A member name that can be a path below the store: relative, no empty, "."
// or ".." components, no NUL or backslash ("dir/" names a directory).
bool SafeName(const std::string& name) {
  if (name.empty() || name.front() == '/') return false;
  if (name.find('\0') != std::string::npos || name.find('\\') != std::string::npos) return false;
  size_t start = 0;
  while (start < name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    const std::string part = name.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

struct EndRecord {
  int64_t entries = 0;
  int64_t cd_size = 0;
  int64_t cd_offset = 0;
  int64_t position = 0;  // of the record that ends the central directory
};

// The end of central directory record in `tail` (the archive's last bytes,
// starting at `tail_offset`): the last signature whose comment ends the file.
Result<EndRecord> FindEndRecord(std::span<const uint8_t> tail, int64_t tail_offset,
                                int64_t file_size) {
  if (tail.size() < static_cast<size_t>(kZipEndRecordSize)) return BadZip("shorter than 22 bytes");
  for (size_t at = tail.size() - kZipEndRecordSize + 1; at-- > 0;) {
    if (U32(tail, at) != kEndSignature) continue;
    const int64_t comment = U16(tail, at + 20);
    if (tail_offset + static_cast<int64_t>(at) + kZipEndRecordSize + comment != file_size) {
      continue;
    }
    if (U16(tail, at + 4) != 0 || U16(tail, at + 6) != 0) return BadZip("spans several disks");
    EndRecord end;
    end.entries = U16(tail, at + 10);
    if (U16(tail, at + 8) != end.entries) return BadZip("entry counts disagree");
    end.cd_size = U32(tail, at + 12);
    end.cd_offset = U32(tail, at + 16);
    end.position = tail_offset + static_cast<int64_t>(at);
    return end;
  }
  return BadZip("no end of central directory record (not a zip file)");
}

// Replaces the end record's fields with the ZIP64 record's, when a locator
// precedes the end record. `read` as ReadZipDirectory's.
Status ApplyZip64(const ZipReadAt& read, int64_t file_size, EndRecord* end) {
  if (end->position < kZip64LocatorSize) return Status::Ok();
  auto locator = read(end->position - kZip64LocatorSize, kZip64LocatorSize);
  if (!locator.ok()) return locator.status();
  if (U32(*locator, 0) != kZip64LocatorSignature) return Status::Ok();
  const uint64_t record_offset = U64(*locator, 8);
  if (U32(*locator, 4) != 0 || U32(*locator, 16) > 1) return BadZip("ZIP64 spans several disks");
  if (record_offset > static_cast<uint64_t>(end->position - kZip64LocatorSize - kZip64EndSize)) {
    return BadZip("ZIP64 end record offset " + std::to_string(record_offset) + " out of the file");
  }
  const int64_t at = static_cast<int64_t>(record_offset);
  auto record = read(at, kZip64EndSize);
  if (!record.ok()) return record.status();
  if (U32(*record, 0) != kZip64EndSignature)
    return BadZip("no ZIP64 end record where its locator says");
  if (U32(*record, 16) != 0 || U32(*record, 20) != 0) return BadZip("ZIP64 spans several disks");
  const uint64_t entries = U64(*record, 32);
  const uint64_t cd_size = U64(*record, 40);
  const uint64_t cd_offset = U64(*record, 48);
  if (entries != U64(*record, 24)) return BadZip("ZIP64 entry counts disagree");
  if (entries > static_cast<uint64_t>(kMaxZipMembers)) {
    return BadZip(std::to_string(entries) + " members (at most " + std::to_string(kMaxZipMembers) +
                  " are read)");
  }
  if (cd_size > static_cast<uint64_t>(file_size) || cd_offset > static_cast<uint64_t>(file_size)) {
    return BadZip("ZIP64 central directory out of the file");
  }
  end->entries = static_cast<int64_t>(entries);
  end->cd_size = static_cast<int64_t>(cd_size);
  end->cd_offset = static_cast<int64_t>(cd_offset);
  end->position = at;
  return Status::Ok();
}

// The ZIP64 extra field's values for the fields the header set to all ones.
Status ReadZip64Extra(std::span<const uint8_t> extra, ZipMember* m, bool size_max, bool csize_max,
                      bool offset_max) {
  size_t at = 0;
  while (at + 4 <= extra.size()) {
    const uint16_t id = U16(extra, at);
    const size_t length = U16(extra, at + 2);
    if (at + 4 + length > extra.size())
      return BadZip(m->name + ": extra field overruns its header");
    if (id == 0x0001) {
      std::span<const uint8_t> field = extra.subspan(at + 4, length);
      size_t pos = 0;
      auto next = [&](int64_t* out) -> bool {
        if (pos + 8 > field.size()) return false;
        const uint64_t v = U64(field, pos);
        pos += 8;
        if (v > static_cast<uint64_t>(INT64_MAX)) return false;
        *out = static_cast<int64_t>(v);
        return true;
      };
      if ((size_max && !next(&m->size)) || (csize_max && !next(&m->compressed_size)) ||
          (offset_max && !next(&m->header_offset))) {
        return BadZip(m->name + ": ZIP64 extra field too short");
      }
      return Status::Ok();
    }
    at += 4 + length;
  }
  if (size_max || csize_max || offset_max) return BadZip(m->name + ": no ZIP64 extra field");
  return Status::Ok();
}

Result<ZipDirectory> ParseCentralDirectory(std::span<const uint8_t> cd, const EndRecord& end) {
  ZipDirectory dir;
  dir.central_directory_offset = end.cd_offset;
  if (end.entries * kCentralHeaderSize > static_cast<int64_t>(cd.size())) {
    return BadZip(std::to_string(end.entries) + " members cannot fit a central directory of " +
                  std::to_string(cd.size()) + " bytes");
  }
  dir.members.reserve(static_cast<size_t>(end.entries));
  size_t at = 0;
  for (int64_t i = 0; i < end.entries; ++i) {
    if (at + kCentralHeaderSize > cd.size()) return BadZip("central directory truncated");
    if (U32(cd, at) != kCentralSignature) {
      return BadZip("central directory entry " + std::to_string(i) + " has no signature");
    }
    ZipMember m;
    m.flags = U16(cd, at + 8);
    m.method = U16(cd, at + 10);
    const uint32_t csize = U32(cd, at + 20);
    const uint32_t usize = U32(cd, at + 24);
    const size_t name_length = U16(cd, at + 28);
    const size_t extra_length = U16(cd, at + 30);
    const size_t comment_length = U16(cd, at + 32);
    const uint32_t offset = U32(cd, at + 42);
    const size_t next = at + kCentralHeaderSize + name_length + extra_length + comment_length;
    if (next > cd.size())
      return BadZip("central directory entry " + std::to_string(i) + " truncated");
    m.name.assign(reinterpret_cast<const char*>(cd.data() + at + kCentralHeaderSize), name_length);
    m.size = usize;
    m.compressed_size = csize;
    m.header_offset = offset;
    Status s = ReadZip64Extra(cd.subspan(at + kCentralHeaderSize + name_length, extra_length), &m,
                              usize == 0xFFFFFFFFu, csize == 0xFFFFFFFFu, offset == 0xFFFFFFFFu);
    if (!s.ok()) return s;
    if (!SafeName(m.name)) {
      m.problem = "its name is not a relative path without \".\" or \"..\"";
    } else if (m.flags & 1) {
      m.problem = "encrypted";
    } else if (m.method != 0) {
      m.problem = "compressed (method " + std::to_string(m.method) +
                  "): only stored (ZIP_STORED) members are read in place";
    } else if (m.compressed_size != m.size) {
      m.problem = "stored, yet its compressed and uncompressed sizes differ";
    }
    dir.members.push_back(std::move(m));
    at = next;
  }
  // Each member's bytes end where the next local header or the central
  // directory begins, whichever comes first (a next header past the
  // directory is refused below, but must not move this member's end past
  // it); members that share bytes are refused.
  std::vector<size_t> order(dir.members.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return dir.members[a].header_offset < dir.members[b].header_offset;
  });
  std::map<std::string, size_t> names;
  for (size_t k = 0; k < order.size(); ++k) {
    ZipMember& m = dir.members[order[k]];
    m.limit = k + 1 < order.size()
                  ? std::min(dir.members[order[k + 1]].header_offset, end.cd_offset)
                  : end.cd_offset;
    const auto need =
        CheckedAdd(m.header_offset, kZipLocalHeaderSize + static_cast<int64_t>(m.name.size()));
    const auto data_end = need ? CheckedAdd(*need, m.compressed_size) : std::nullopt;
    if (m.header_offset >= end.cd_offset) {
      if (m.problem.empty()) {
        m.problem = "its local header offset " + std::to_string(m.header_offset) +
                    " lies past the members (the central directory begins at " +
                    std::to_string(end.cd_offset) + ")";
      }
    } else if (!data_end || *data_end > m.limit) {
      if (m.problem.empty()) {
        m.problem = "its bytes (local header at " + std::to_string(m.header_offset) + ", " +
                    std::to_string(m.compressed_size) +
                    " bytes) overlap another member or the central directory";
      }
    }
    auto [it, inserted] = names.emplace(m.name, order[k]);
    if (!inserted) {
      m.problem = "a second member of the same name";
      dir.members[it->second].problem = "a second member of the same name";
    }
  }
  return dir;
}

}  // namespace

Result<ZipDirectory> ReadZipDirectory(const ZipReadAt& read, int64_t file_size) {
  if (file_size < kZipEndRecordSize) return BadZip("shorter than 22 bytes (not a zip file)");
  const int64_t tail_length = std::min(file_size, kZipEndRecordSize + kZipMaxCommentSize);
  const int64_t tail_offset = file_size - tail_length;
  auto tail = read(tail_offset, tail_length);
  if (!tail.ok()) return tail.status();
  auto end = FindEndRecord(*tail, tail_offset, file_size);
  if (!end.ok()) return end.status();
  if (Status s = ApplyZip64(read, file_size, &*end); !s.ok()) return s;
  if (end->entries > kMaxZipMembers) return BadZip("too many members");
  if (end->cd_size > kMaxCentralDirectorySize) {
    return BadZip("central directory of " + std::to_string(end->cd_size) + " bytes (at most " +
                  std::to_string(kMaxCentralDirectorySize) + " are read)");
  }
  // python-blosc2's archives start at byte 0: the central directory ends
  // where the end records begin.
  if (end->cd_offset + end->cd_size != end->position) {
    return BadZip("central directory (" + std::to_string(end->cd_size) + " bytes at " +
                  std::to_string(end->cd_offset) + ") does not end where the end record begins (" +
                  std::to_string(end->position) + ")");
  }
  std::vector<uint8_t> cd;
  if (end->cd_size > 0) {
    auto bytes = read(end->cd_offset, end->cd_size);
    if (!bytes.ok()) return bytes.status();
    cd = std::move(bytes).value();
  }
  return ParseCentralDirectory(cd, *end);
}

Result<ZipDirectory> ParseZipArchive(std::span<const uint8_t> archive) {
  const int64_t size = static_cast<int64_t>(archive.size());
  return ReadZipDirectory(
      [&](int64_t offset, int64_t length) -> Result<std::vector<uint8_t>> {
        if (offset < 0 || length < 0 || offset > size || length > size - offset) {
          return BadZip("read past the end");
        }
        return std::vector<uint8_t>(archive.begin() + offset, archive.begin() + offset + length);
      },
      size);
}

Result<int64_t> MemberDataOffset(const ZipMember& member, std::span<const uint8_t> local) {
  const std::string what = "zip member " + member.name + ": ";
  if (!member.problem.empty()) return InvalidData(what + member.problem);
  if (local.size() < kZipLocalHeaderSize + member.name.size()) {
    return InvalidData(what + "local header truncated");
  }
  if (U32(local, 0) != kLocalSignature) return InvalidData(what + "no local header at its offset");
  const size_t name_length = U16(local, 26);
  const int64_t extra_length = U16(local, 28);
  if (name_length != member.name.size() ||
      std::string_view(reinterpret_cast<const char*>(local.data() + kZipLocalHeaderSize),
                       name_length) != member.name) {
    return InvalidData(what + "its local header names another member");
  }
  if (U16(local, 8) != 0) return InvalidData(what + "its local header says it is compressed");
  const int64_t data =
      member.header_offset + kZipLocalHeaderSize + static_cast<int64_t>(name_length) + extra_length;
  if (data + member.size > member.limit) {
    return InvalidData(what + "its bytes overlap the next member or the central directory");
  }
  return data;
}

Status ResolveMemberData(const source::ByteSource& src, int64_t size, ZipDirectory* zip,
                         std::vector<int64_t>* data_offsets) {
  data_offsets->assign(zip->members.size(), -1);
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<source::PartRead> reads;
  std::vector<size_t> which;
  buffers.reserve(zip->members.size());
  for (size_t i = 0; i < zip->members.size(); ++i) {
    ZipMember& m = zip->members[i];
    if (!m.problem.empty() || m.name.back() == '/') continue;
    const int64_t length = kZipLocalHeaderSize + static_cast<int64_t>(m.name.size());
    if (m.header_offset > size - length) {
      m.problem = "its local header lies beyond the end of the file";
      continue;
    }
    buffers.emplace_back(static_cast<size_t>(length));
    reads.push_back(source::PartRead{source::kFramePart, m.header_offset,
                                     static_cast<size_t>(length), buffers.back().data()});
    which.push_back(i);
  }
  Status failed;
  src.ReadMany(reads, [&](size_t k, const Status& s) {
    if (!s.ok()) {
      if (failed.ok()) failed = s;
      return;
    }
    ZipMember& m = zip->members[which[k]];
    auto data = MemberDataOffset(m, buffers[k]);
    if (data.ok()) {
      (*data_offsets)[which[k]] = *data;
    } else {
      const std::string prefix = "zip member " + m.name + ": ";
      const std::string& msg = data.status().message();
      m.problem = msg.rfind(prefix, 0) == 0 ? msg.substr(prefix.size()) : msg;
    }
  });
  return failed;
}

}  // namespace b2ndfs::stores
