// The ZIP central directory parser of the stores module (python-blosc2's
// .b2z archives): members found where they are, ZIP64 records and extra
// fields, and hostile archives refused with a message, never a member's
// bytes taken from another one.
#include "b2ndfs/stores/zip_directory.h"

#include <catch2/catch.hpp>

#include "zip_test_archive.h"

using b2ndfs::stores::MemberDataOffset;
using b2ndfs::stores::ParseZipArchive;
using b2ndfs::stores::ZipMember;
using b2ndfs::testing::MakeTestArchive;
using b2ndfs::testing::Set16;
using b2ndfs::testing::Set32;
using b2ndfs::testing::TestArchive;
using b2ndfs::testing::TestMember;

namespace {

std::span<const uint8_t> LocalOf(const TestArchive& a, const ZipMember& m) {
  return std::span<const uint8_t>(a.bytes).subspan(static_cast<size_t>(m.header_offset));
}

}  // namespace

TEST_CASE("stored members are found at their data offsets") {
  TestArchive a = MakeTestArchive({{"arr.b2nd", "ABCDEFGH"},
                                   {"group/leaf.b2f", "xyz", 0, std::string(9, 'e')},
                                   {"embed.b2e", "0123456789"}},
                                  false, "a comment");
  auto dir = ParseZipArchive(a.bytes);
  REQUIRE(dir.ok());
  REQUIRE(dir->members.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    const ZipMember& m = dir->members[i];
    CHECK(m.problem.empty());
    auto data = MemberDataOffset(m, LocalOf(a, m));
    REQUIRE(data.ok());
    // The local header's extra field counts, as python-blosc2 reads it.
    CHECK(*data == a.data_offsets[i]);
  }
  CHECK(dir->members[1].name == "group/leaf.b2f");
  CHECK(dir->members[1].size == 3);
}

TEST_CASE("ZIP64 end records and extra fields are read") {
  TestArchive a = MakeTestArchive({{"a.b2nd", "hello", 0, "", true}, {"embed.b2e", "world"}}, true);
  auto dir = ParseZipArchive(a.bytes);
  REQUIRE(dir.ok());
  REQUIRE(dir->members.size() == 2);
  CHECK(dir->members[0].size == 5);
  CHECK(dir->members[0].header_offset == a.header_offsets[0]);
  auto data = MemberDataOffset(dir->members[0], LocalOf(a, dir->members[0]));
  REQUIRE(data.ok());
  CHECK(*data == a.data_offsets[0]);
}

TEST_CASE("what is not a zip archive is refused") {
  std::vector<uint8_t> junk(300, 0x41);
  auto dir = ParseZipArchive(junk);
  REQUIRE_FALSE(dir.ok());
  CHECK(dir.status().message().find("not a zip file") != std::string::npos);
  CHECK_FALSE(ParseZipArchive(std::vector<uint8_t>(10, 0)).ok());
  CHECK_FALSE(ParseZipArchive({}).ok());
}

TEST_CASE("a member compressed, encrypted or unsafely named has a problem") {
  TestArchive a = MakeTestArchive(
      {{"d.b2nd", "data", 8}, {"../up.b2nd", "x"}, {"/abs.b2nd", "x"}, {"a//b.b2nd", "x"}});
  Set16(a.bytes, a.central_entries[0] + 8, 0);
  auto dir = ParseZipArchive(a.bytes);
  REQUIRE(dir.ok());
  CHECK(dir->members[0].problem.find("compressed (method 8)") != std::string::npos);
  for (size_t i = 1; i < 4; ++i) CHECK(dir->members[i].problem.find("name") != std::string::npos);
  CHECK_FALSE(MemberDataOffset(dir->members[0], LocalOf(a, dir->members[0])).ok());
}

TEST_CASE("a local header offset past the members is a problem, not a read elsewhere") {
  TestArchive a = MakeTestArchive({{"a.b2nd", "aaaa"}, {"b.b2nd", "bbbb"}});
  Set32(a.bytes, a.central_entries[0] + 42, 0xFFFFFF00u);
  auto dir = ParseZipArchive(a.bytes);
  REQUIRE(dir.ok());
  CHECK(dir->members[0].problem.find("lies past the members") != std::string::npos);
  CHECK(dir->members[1].problem.empty());
}

TEST_CASE("overlapping members are refused, both of them") {
  TestArchive a = MakeTestArchive({{"a.b2nd", "aaaaaaaa"}, {"b.b2nd", "bbbb"}, {"c.b2nd", "c"}});
  // b's central entry points at a's local header.
  Set32(a.bytes, a.central_entries[1] + 42, static_cast<uint32_t>(a.header_offsets[0]));
  auto dir = ParseZipArchive(a.bytes);
  REQUIRE(dir.ok());
  const ZipMember& first = dir->members[0];
  const ZipMember& second = dir->members[1];
  // Both start at one offset: whichever sorts first cannot fit before the other.
  const bool one_refused = !first.problem.empty() || !second.problem.empty();
  CHECK(one_refused);
  for (const ZipMember* m : {&first, &second}) {
    if (!m->problem.empty()) continue;
    // The one left must still be refused by its local header (it names a).
    auto data = MemberDataOffset(*m, LocalOf(a, *m));
    if (m->name == "b.b2nd") {
      REQUIRE_FALSE(data.ok());
      CHECK(data.status().message().find("names another member") != std::string::npos);
    }
  }
  CHECK(dir->members[2].problem.empty());
}

TEST_CASE("a member longer than the room before the next one is refused") {
  TestArchive a = MakeTestArchive({{"a.b2nd", "aaaa"}, {"b.b2nd", "bbbb"}});
  Set32(a.bytes, a.central_entries[0] + 20, 4000);
  Set32(a.bytes, a.central_entries[0] + 24, 4000);
  auto dir = ParseZipArchive(a.bytes);
  REQUIRE(dir.ok());
  CHECK(dir->members[0].problem.find("overlap") != std::string::npos);
  CHECK(dir->members[1].problem.empty());
}

TEST_CASE("a local extra field that pushes the data past the next member is refused") {
  TestArchive a = MakeTestArchive({{"a.b2nd", "aaaa"}, {"b.b2nd", "bbbb"}});
  Set16(a.bytes, a.header_offsets[0] + 28, 60000);
  auto dir = ParseZipArchive(a.bytes);
  REQUIRE(dir.ok());
  auto data = MemberDataOffset(dir->members[0], LocalOf(a, dir->members[0]));
  REQUIRE_FALSE(data.ok());
  CHECK(data.status().message().find("overlap") != std::string::npos);
}

TEST_CASE("a member's room ends at the central directory even when the next header lies past it") {
  // b's header offset points past the members (b is refused); a's room must
  // still end where the central directory begins, so a local extra field
  // that moves a's data into it is refused (found by fuzz_zip_directory).
  TestArchive a = MakeTestArchive({{"a.b2nd", "aaaa"}, {"b.b2nd", "bbbb"}});
  const int64_t cd_offset = a.central_entries[0];
  Set32(a.bytes, a.central_entries[1] + 42, static_cast<uint32_t>(cd_offset + 8));
  Set16(a.bytes, a.header_offsets[0] + 28, 50);  // a's data 50 bytes later: in the directory
  auto dir = ParseZipArchive(a.bytes);
  REQUIRE(dir.ok());
  CHECK(dir->members[1].problem.find("lies past the members") != std::string::npos);
  CHECK(dir->members[0].limit <= dir->central_directory_offset);
  auto data = MemberDataOffset(dir->members[0], LocalOf(a, dir->members[0]));
  REQUIRE_FALSE(data.ok());
  CHECK(data.status().message().find("overlap") != std::string::npos);
}

TEST_CASE("huge member counts and inconsistent directories are refused") {
  TestArchive a = MakeTestArchive({{"a.b2nd", "aaaa"}});
  SECTION("65535 members claimed") {
    Set16(a.bytes, a.end_record + 8, 0xFFFF);
    Set16(a.bytes, a.end_record + 10, 0xFFFF);
    auto dir = ParseZipArchive(a.bytes);
    REQUIRE_FALSE(dir.ok());
    CHECK(dir.status().message().find("65535 members") != std::string::npos);
  }
  SECTION("counts that disagree") {
    Set16(a.bytes, a.end_record + 8, 2);
    CHECK_FALSE(ParseZipArchive(a.bytes).ok());
  }
  SECTION("a central directory that does not end at the end record") {
    Set32(a.bytes, a.end_record + 16, 1);
    auto dir = ParseZipArchive(a.bytes);
    REQUIRE_FALSE(dir.ok());
    CHECK(dir.status().message().find("does not end") != std::string::npos);
  }
  SECTION("a central directory size past the file") {
    Set32(a.bytes, a.end_record + 12, 0x7FFFFFFF);
    CHECK_FALSE(ParseZipArchive(a.bytes).ok());
  }
  SECTION("several disks") {
    Set16(a.bytes, a.end_record + 4, 1);
    CHECK_FALSE(ParseZipArchive(a.bytes).ok());
  }
}

TEST_CASE("ZIP64 records that point anywhere are refused") {
  TestArchive a = MakeTestArchive({{"a.b2nd", "hello"}}, true);
  const int64_t locator = a.end_record - 20;
  SECTION("record offset past the locator") {
    Set32(a.bytes, locator + 8, 0x7FFFFFF0u);
    CHECK_FALSE(ParseZipArchive(a.bytes).ok());
  }
  SECTION("a billion members") {
    const int64_t record = locator - 56;
    Set32(a.bytes, record + 24, 1000000000u);
    Set32(a.bytes, record + 32, 1000000000u);
    auto dir = ParseZipArchive(a.bytes);
    REQUIRE_FALSE(dir.ok());
    CHECK(dir.status().message().find("members") != std::string::npos);
  }
}

TEST_CASE("two members of one name are both refused") {
  TestArchive a = MakeTestArchive({{"a.b2nd", "1"}, {"a.b2nd", "2"}});
  auto dir = ParseZipArchive(a.bytes);
  REQUIRE(dir.ok());
  CHECK(dir->members[0].problem.find("same name") != std::string::npos);
  CHECK(dir->members[1].problem.find("same name") != std::string::npos);
}
