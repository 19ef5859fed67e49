// A ZIP archive written byte by byte for the stores tests (unit and fuzz
// seeds): stored or "deflated" members (the bytes are not compressed; the
// method field says so), ZIP64 records on request, and fields to corrupt.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace b2ndfs::testing {

struct TestMember {
  std::string name;
  std::string data;
  int method = 0;
  std::string local_extra;     // extra field of the local header only
  bool zip64_central = false;  // sizes and offset in a ZIP64 extra field
};

struct TestArchive {
  std::vector<uint8_t> bytes;
  std::vector<int64_t> header_offsets;
  std::vector<int64_t> data_offsets;
  std::vector<int64_t> central_entries;  // offset of each central header
  int64_t end_record = 0;
};

inline void Put16(std::vector<uint8_t>& b, uint32_t v) {
  b.push_back(static_cast<uint8_t>(v));
  b.push_back(static_cast<uint8_t>(v >> 8));
}
inline void Put32(std::vector<uint8_t>& b, uint32_t v) {
  Put16(b, v & 0xFFFF);
  Put16(b, v >> 16);
}
inline void Put64(std::vector<uint8_t>& b, uint64_t v) {
  Put32(b, static_cast<uint32_t>(v));
  Put32(b, static_cast<uint32_t>(v >> 32));
}
inline void Set32(std::vector<uint8_t>& b, int64_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[static_cast<size_t>(at + i)] = static_cast<uint8_t>(v >> (8 * i));
}
inline void Set16(std::vector<uint8_t>& b, int64_t at, uint32_t v) {
  b[static_cast<size_t>(at)] = static_cast<uint8_t>(v);
  b[static_cast<size_t>(at + 1)] = static_cast<uint8_t>(v >> 8);
}

inline TestArchive MakeTestArchive(const std::vector<TestMember>& members, bool zip64_end = false,
                                   const std::string& comment = "") {
  TestArchive a;
  auto& b = a.bytes;
  for (const auto& m : members) {
    a.header_offsets.push_back(static_cast<int64_t>(b.size()));
    Put32(b, 0x04034b50);
    Put16(b, 20);
    Put16(b, 0);
    Put16(b, static_cast<uint32_t>(m.method));
    Put32(b, 0);  // time, date
    Put32(b, 0);  // crc (not checked)
    Put32(b, static_cast<uint32_t>(m.data.size()));
    Put32(b, static_cast<uint32_t>(m.data.size()));
    Put16(b, static_cast<uint32_t>(m.name.size()));
    Put16(b, static_cast<uint32_t>(m.local_extra.size()));
    b.insert(b.end(), m.name.begin(), m.name.end());
    b.insert(b.end(), m.local_extra.begin(), m.local_extra.end());
    a.data_offsets.push_back(static_cast<int64_t>(b.size()));
    b.insert(b.end(), m.data.begin(), m.data.end());
  }
  const int64_t cd_offset = static_cast<int64_t>(b.size());
  for (size_t i = 0; i < members.size(); ++i) {
    const auto& m = members[i];
    a.central_entries.push_back(static_cast<int64_t>(b.size()));
    Put32(b, 0x02014b50);
    Put16(b, 45);
    Put16(b, 20);
    Put16(b, 0);
    Put16(b, static_cast<uint32_t>(m.method));
    Put32(b, 0);
    Put32(b, 0);
    const uint32_t size = m.zip64_central ? 0xFFFFFFFFu : static_cast<uint32_t>(m.data.size());
    Put32(b, size);
    Put32(b, size);
    Put16(b, static_cast<uint32_t>(m.name.size()));
    Put16(b, m.zip64_central ? 28 : 0);
    Put16(b, 0);
    Put16(b, 0);
    Put16(b, 0);
    Put32(b, 0);
    Put32(b, m.zip64_central ? 0xFFFFFFFFu : static_cast<uint32_t>(a.header_offsets[i]));
    b.insert(b.end(), m.name.begin(), m.name.end());
    if (m.zip64_central) {
      Put16(b, 1);
      Put16(b, 24);
      Put64(b, m.data.size());
      Put64(b, m.data.size());
      Put64(b, static_cast<uint64_t>(a.header_offsets[i]));
    }
  }
  const int64_t cd_size = static_cast<int64_t>(b.size()) - cd_offset;
  if (zip64_end) {
    const int64_t record = static_cast<int64_t>(b.size());
    Put32(b, 0x06064b50);
    Put64(b, 44);
    Put16(b, 45);
    Put16(b, 45);
    Put32(b, 0);
    Put32(b, 0);
    Put64(b, members.size());
    Put64(b, members.size());
    Put64(b, static_cast<uint64_t>(cd_size));
    Put64(b, static_cast<uint64_t>(cd_offset));
    Put32(b, 0x07064b50);
    Put32(b, 0);
    Put64(b, static_cast<uint64_t>(record));
    Put32(b, 1);
  }
  a.end_record = static_cast<int64_t>(b.size());
  Put32(b, 0x06054b50);
  Put16(b, 0);
  Put16(b, 0);
  const uint32_t count = zip64_end ? 0xFFFF : static_cast<uint32_t>(members.size());
  Put16(b, count);
  Put16(b, count);
  Put32(b, zip64_end ? 0xFFFFFFFFu : static_cast<uint32_t>(cd_size));
  Put32(b, zip64_end ? 0xFFFFFFFFu : static_cast<uint32_t>(cd_offset));
  Put16(b, static_cast<uint32_t>(comment.size()));
  b.insert(b.end(), comment.begin(), comment.end());
  return a;
}

}  // namespace b2ndfs::testing
