#include "options.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "preflight.h"

using b2ndfs::LogLevel;
using b2ndfs::app::ParseCommandLine;
using b2ndfs::app::ParseSize;

namespace {

b2ndfs::Result<b2ndfs::app::CommandLine> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "b2ndfs");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return ParseCommandLine(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("sizes take K, M, G, T suffixes") {
  CHECK(ParseSize("0") == 0u);
  CHECK(ParseSize("4096") == 4096u);
  CHECK(ParseSize("64K") == 64u << 10);
  CHECK(ParseSize("512m") == 512ull << 20);
  CHECK(ParseSize("2G") == 2ull << 30);
  CHECK(ParseSize("2GiB") == 2ull << 30);
  CHECK(ParseSize("1T") == 1ull << 40);
  CHECK_FALSE(ParseSize("").has_value());
  CHECK_FALSE(ParseSize("abc").has_value());
  CHECK_FALSE(ParseSize("-1G").has_value());
  CHECK_FALSE(ParseSize("12X").has_value());
  CHECK_FALSE(ParseSize("99999999999999999999").has_value());
  CHECK_FALSE(ParseSize("17179869184G").has_value());  // overflows 64 bits
}

TEST_CASE("source, mountpoint and our options") {
  auto cl = Parse({"-o", "cache_size=64M,threads=3", "/src", "/mnt"});
  REQUIRE(cl.ok());
  CHECK(cl->source == "/src");
  CHECK(cl->mountpoint == "/mnt");
  CHECK(cl->cache_size == 64u << 20);
  CHECK(cl->threads == 3);
  CHECK(cl->fuse_options.empty());
  CHECK_FALSE(cl->foreground);
}

TEST_CASE("mount helper order and fstab options are accepted") {
  auto cl = Parse({"/src", "/mnt", "-o",
                   "ro,nofail,_netdev,noauto,defaults,x-systemd.automount,allow_other,dev"});
  REQUIRE(cl.ok());
  CHECK(cl->allow_other);
  CHECK(cl->fuse_options == std::vector<std::string>{"allow_other", "dev"});
}

TEST_CASE("-f, -d, -s and -oOPTION") {
  auto cl = Parse({"-f", "-s", "-ocache_size=1G", "a", "b"});
  REQUIRE(cl.ok());
  CHECK(cl->foreground);
  CHECK(cl->single_threaded);
  CHECK(cl->cache_size == 1ull << 30);
  auto debug = Parse({"-d", "a", "b"});
  REQUIRE(debug.ok());
  CHECK(debug->foreground);
  CHECK(debug->debug);
}

TEST_CASE("command-line errors are reported") {
  CHECK_FALSE(Parse({"/src"}).ok());
  CHECK_FALSE(Parse({"/a", "/b", "/c"}).ok());
  CHECK_FALSE(Parse({"-o", "cache_size=abc", "/a", "/b"}).ok());
  CHECK_FALSE(Parse({"-o", "threads=0", "/a", "/b"}).ok());
  CHECK_FALSE(Parse({"-o", "threads=two", "/a", "/b"}).ok());
  CHECK_FALSE(Parse({"--bogus", "/a", "/b"}).ok());
  CHECK_FALSE(Parse({"/a", "/b", "-o"}).ok());
  auto bad = Parse({"-o", "cache_size=abc", "/a", "/b"});
  CHECK(bad.status().message().find("cache_size=abc") != std::string::npos);
}

TEST_CASE("max_threads, max_open and log_level") {
  auto cl = Parse({"-o", "max_threads=32,max_open=500,log_level=warning", "/src", "/mnt"});
  REQUIRE(cl.ok());
  CHECK(cl->max_threads == 32);
  CHECK(cl->max_open == 500);
  REQUIRE(cl->log_level.has_value());
  CHECK(*cl->log_level == LogLevel::kWarning);
  CHECK(cl->fuse_options.empty());  // ours, not passed on to libfuse
  CHECK_FALSE(cl->no_hugepages);
  auto small_pages = Parse({"-o", "no_hugepages", "/src", "/mnt"});
  REQUIRE(small_pages.ok());
  CHECK(small_pages->no_hugepages);
  CHECK(small_pages->fuse_options.empty());

  auto defaults = Parse({"/src", "/mnt"});
  REQUIRE(defaults.ok());
  CHECK(defaults->max_threads == 0);
  CHECK(defaults->max_open == 0);
  CHECK_FALSE(defaults->log_level.has_value());

  auto zero = Parse({"-o", "max_open=0,log_level=debug", "/src", "/mnt"});
  REQUIRE(zero.ok());
  CHECK(zero->max_open == 0);
  CHECK(*zero->log_level == LogLevel::kDebug);
  CHECK(Parse({"-o", "log_level=error", "/a", "/b"})->log_level == LogLevel::kError);
  CHECK(Parse({"-o", "log_level=info", "/a", "/b"})->log_level == LogLevel::kInfo);
}

TEST_CASE("bad max_threads, max_open and log_level values are reported") {
  for (const char* option :
       {"max_threads=0", "max_threads=-4", "max_threads=", "max_threads=ten", "max_threads=8x",
        "max_threads=1025", "max_threads=99999999999999999999", "max_threads= 8", "max_open=-1",
        "max_open=", "max_open=many", "max_open=2000000", "threads=+3",
        "log_level=", "log_level=verbose", "log_level=DEBUG", "log_level=3"}) {
    INFO(option);
    auto cl = Parse({"-o", option, "/a", "/b"});
    REQUIRE_FALSE(cl.ok());
    CHECK(cl.status().message().find(option) != std::string::npos);
  }
}

TEST_CASE("log_access= and ino32") {
  auto defaults = Parse({"/src", "/mnt"});
  REQUIRE(defaults.ok());
  CHECK_FALSE(defaults->log_access_all);
  CHECK_FALSE(defaults->ino32);
  auto cl = Parse({"-o", "allow_other,log_access=all,ino32", "/src", "/mnt"});
  REQUIRE(cl.ok());
  CHECK(cl->log_access_all);
  CHECK(cl->ino32);
  // Neither is passed on to libfuse, which would refuse it.
  CHECK(cl->fuse_options == std::vector<std::string>{"allow_other"});
  cl = Parse({"-o", "log_access=all", "-o", "log_access=owner", "/src", "/mnt"});
  REQUIRE(cl.ok());
  CHECK_FALSE(cl->log_access_all);
  for (const char* option : {"log_access=", "log_access=everyone", "log_access=ALL"}) {
    INFO(option);
    auto bad = Parse({"-o", option, "/a", "/b"});
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().message().find(option) != std::string::npos);
    CHECK(bad.status().message().find("owner or all") != std::string::npos);
  }
}

TEST_CASE("log_file= and views=, whose kinds may follow it after commas") {
  auto cl =
      Parse({"-o", "log_file=/var/log/b2ndfs.log,views=meta,data,npy,allow_other", "/a", "/b"});
  REQUIRE(cl.ok());
  CHECK(cl->log_file == "/var/log/b2ndfs.log");
  CHECK(cl->views == std::vector<std::string>{"meta", "data", "npy"});
  CHECK(cl->allow_other);
  cl = Parse({"-o", "views=zarr\\,view", "-o", "views=slices", "/a", "/b"});
  REQUIRE(cl.ok());
  CHECK(cl->views == std::vector<std::string>{"zarr", "view", "slices"});
  // Kinds continue a views= list only: elsewhere "data" is no option at all.
  auto data = Parse({"-o", "ro,data", "/a", "/b"});
  REQUIRE_FALSE(data.ok());
  CHECK(data.status().message().find("unknown option 'data'") != std::string::npos);
  for (const char* option : {"views=", "views=bogus", "views=meta\\,bogus", "log_file="}) {
    INFO(option);
    auto bad = Parse({"-o", option, "/a", "/b"});
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().message().find(option[0] == 'v' ? "views=" : "log_file=") !=
          std::string::npos);
  }
  CHECK(Parse({"-o", "views=bogus", "/a", "/b"}).status().message().find("known: meta, data") !=
        std::string::npos);
}

TEST_CASE("options neither ours nor libfuse's are refused before mounting") {
  for (const char* option : {"bogus", "nii", "fsname", "fsname=", "allow-other", "max_read",
                             "cache-size=1G", "debugg", "subtype"}) {
    INFO(option);
    auto bad = Parse({"-o", option, "/a", "/b"});
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().message().find("unknown option '" + std::string(option) + "'") !=
          std::string::npos);
  }
  // A name after views= that is no kind is most likely a misspelt one.
  auto nii = Parse({"-o", "views=meta,nii", "/a", "/b"});
  REQUIRE_FALSE(nii.ok());
  CHECK(nii.status().message().find("'nii' after views= is neither a kind of view (known: meta") !=
        std::string::npos);
  // ...but an option still ends the list.
  auto listed = Parse({"-o", "views=meta,nifti,allow_root,fsname=x", "/a", "/b"});
  REQUIRE(listed.ok());
  CHECK(listed->views == std::vector<std::string>{"meta", "nifti"});
  CHECK(listed->fuse_options == std::vector<std::string>{"allow_root", "fsname=x"});
  // libfuse's own mount options pass on unchanged.
  auto fuse = Parse({"-o",
                     "auto_unmount,default_permissions,nosuid,nodev,noexec,noatime,"
                     "max_read=131072,subtype=arrays,context=system_u:object_r:tmp_t:s0",
                     "/a", "/b"});
  REQUIRE(fuse.ok());
  CHECK(fuse->fuse_options.size() == 9);
  CHECK(fuse->has_default_permissions);
}

TEST_CASE("the default number of request threads") {
  using b2ndfs::app::DefaultMaxThreads;
  CHECK(DefaultMaxThreads(1) == 10);  // never below libfuse's own default
  CHECK(DefaultMaxThreads(8) == 16);
  CHECK(DefaultMaxThreads(100) == 64);
}

TEST_CASE("--help lists every option with its default") {
  const std::string usage = b2ndfs::app::Usage("b2ndfs");
  for (const char* option :
       {"\n  -f ", "\n  -d ", "\n  -s ", "\n  -o cache_size=", "\n  -o threads=",
        "\n  -o max_threads=", "\n  -o max_open=", "\n  -o readahead=", "\n  -o log_level=",
        "\n  -o log_file=", "\n  -o views=", "\n  -o allow_other"}) {
    INFO(option);
    const size_t at = usage.find(option);
    REQUIRE(at != std::string::npos);
    // The option's description (up to the next option) names its default.
    const size_t next = usage.find("\n  -", at + 1);
    CHECK(usage.substr(at, next - at).find("default") != std::string::npos);
  }
}

TEST_CASE("help and version need no arguments") {
  auto help = Parse({"--help"});
  REQUIRE(help.ok());
  CHECK(help->show_help);
  auto version = Parse({"-V"});
  REQUIRE(version.ok());
  CHECK(version->show_version);
}

// --- pre-mount checks (preflight.h) --------------------------------------------

namespace {

const char kMountinfo[] =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "35 22 0:31 / /mnt/data rw,nosuid,nodev,relatime shared:20 - fuse.b2ndfs /src ro,user_id=0\n"
    "36 22 0:32 / /mnt/with\\040space rw,relatime - fuse.sshfs host: rw\n"
    "37 22 0:33 / /mnt/stacked rw - tmpfs tmpfs rw\n"
    "38 37 0:34 / /mnt/stacked rw master:2 - fuse /dev/fuse rw\n"
    "39 22 0:35 / /mnt/fuse-then-bind rw - fuse.b2ndfs /x ro\n"
    "40 39 8:1 /srv /mnt/fuse-then-bind rw - ext4 /dev/sda1 rw\n";

// A temporary directory, removed with its files.
struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/b2ndfs-options-test.XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    path = name;
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string Touch(const std::string& name) const {
    const std::string p = path + "/" + name;
    std::FILE* f = std::fopen(p.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fclose(f);
    return p;
  }
};

}  // namespace

TEST_CASE("the file system type mounted at a path, from mountinfo") {
  using b2ndfs::app::MountedTypeAt;
  CHECK(MountedTypeAt(kMountinfo, "/") == "ext4");
  CHECK(MountedTypeAt(kMountinfo, "/mnt/data") == "fuse.b2ndfs");
  CHECK(MountedTypeAt(kMountinfo, "/mnt/with space") == "fuse.sshfs");  // octal escape
  CHECK(MountedTypeAt(kMountinfo, "/mnt/stacked") == "fuse");           // the topmost
  CHECK(MountedTypeAt(kMountinfo, "/mnt/fuse-then-bind") == "ext4");
  CHECK_FALSE(MountedTypeAt(kMountinfo, "/mnt").has_value());
  CHECK_FALSE(MountedTypeAt(kMountinfo, "/mnt/data/sub").has_value());
  CHECK_FALSE(MountedTypeAt(kMountinfo, "/mnt/with\\040space").has_value());
  CHECK_FALSE(MountedTypeAt("garbage\n\n1 2 3\n", "/").has_value());
}

TEST_CASE("a mountpoint without a FUSE file system on it is free") {
  TempDir dir;
  CHECK(b2ndfs::app::CheckMountpointFree(dir.path).ok());
  CHECK(b2ndfs::app::CheckMountpointFree("/proc").ok());  // mounted, but not FUSE
}

TEST_CASE("a plain file is a SOURCE only if its extension names a container or a store") {
  using b2ndfs::app::CheckSourceKind;
  TempDir dir;
  CHECK(CheckSourceKind(dir.path).ok());
  for (const char* name :
       {"a.b2nd", "a.b2frame", "a.b2f", "a.b2", "a.caterva", "a.cat", "s.b2z", "s.b2e"}) {
    INFO(name);
    CHECK(CheckSourceKind(dir.Touch(name)).ok());
  }
  for (const char* name : {"notes.txt", "a.b2nd.bak", "b2nd", "data.npy"}) {
    INFO(name);
    auto status = CheckSourceKind(dir.Touch(name));
    CHECK_FALSE(status.ok());
    CHECK(status.message().find(name) != std::string::npos);
  }
}

TEST_CASE("the soft open-file limit is raised to the hard limit") {
  struct rlimit before;
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &before) == 0);
  // Start below the hard limit, so that raising is observable.
  struct rlimit lowered = before;
  if (lowered.rlim_max > 64) {
    lowered.rlim_cur = 64;
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &lowered) == 0);
  }
  auto limit = b2ndfs::app::RaiseOpenFileLimit();
  REQUIRE(limit.ok());
  struct rlimit after;
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &after) == 0);
  CHECK(after.rlim_cur == after.rlim_max);
  CHECK(*limit == static_cast<uint64_t>(after.rlim_cur));
  CHECK(after.rlim_max == before.rlim_max);
}

TEST_CASE("remote sources take timeout=, retries=, connections= and prefetch_heads=") {
  auto cl = Parse({"-o", "timeout=2.5,retries=0,connections=64,prefetch_heads=0",
                   "http://127.0.0.1:8080/data/", "/mnt"});
  REQUIRE(cl.ok());
  CHECK(cl->timeout == 2.5);
  CHECK(cl->retries == 0);
  CHECK(cl->connections == 64);
  CHECK(cl->prefetch_heads == 0);
  CHECK(Parse({"http://h/", "/mnt"})->prefetch_heads == -1);  // the store's default
  CHECK(cl->fuse_options.empty());
  CHECK(b2ndfs::app::IsRemoteSource("HTTPS://host/x.b2nd"));
  CHECK(b2ndfs::app::IsRemoteSource("s3://bucket/prefix"));
  CHECK_FALSE(b2ndfs::app::IsRemoteSource("/data/http://x"));
  CHECK_FALSE(b2ndfs::app::IsRemoteSource("ftp://host/x"));
  for (const char* bad : {"timeout=0", "timeout=-1", "timeout=abc", "timeout=", "retries=101",
                          "retries=-1", "connections=0", "connections=1025", "connections=x",
                          "prefetch_heads=-1", "prefetch_heads=", "prefetch_heads=2000000"}) {
    CHECK_FALSE(Parse({"-o", bad, "http://h/", "/mnt"}).ok());
  }
  // Remote options on a local source are a mistake worth reporting.
  CHECK_FALSE(Parse({"-o", "timeout=5", "/data", "/mnt"}).ok());
  CHECK_FALSE(Parse({"-o", "connections=8", "/data", "/mnt"}).ok());
  CHECK_FALSE(Parse({"-o", "prefetch_heads=8", "/data", "/mnt"}).ok());
  // revalidate=SECONDS: how long listings and HEAD answers are reused.
  CHECK(Parse({"-o", "revalidate=30", "s3://b/p", "/mnt"})->revalidate == 30);
  CHECK(Parse({"-o", "revalidate=0", "http://h/", "/mnt"})->revalidate == 0);
  CHECK(Parse({"http://h/", "/mnt"})->revalidate == -1);  // the default (1 s)
  for (const char* bad : {"revalidate=-1", "revalidate=", "revalidate=x", "revalidate=100000"}) {
    CHECK_FALSE(Parse({"-o", bad, "http://h/", "/mnt"}).ok());
  }
  CHECK_FALSE(Parse({"-o", "revalidate=5", "/data", "/mnt"}).ok());
  // S3 settings belong to s3:// sources.
  CHECK_FALSE(Parse({"-o", "region=eu-west-1", "http://h/", "/mnt"}).ok());
  auto s3 = Parse({"-o", "endpoint=http://127.0.0.1:4568,region=us-east-1,no_sign",
                   "s3://bucket/prefix", "/mnt"});
  REQUIRE(s3.ok());
  CHECK(s3->endpoint == "http://127.0.0.1:4568");
  CHECK(s3->no_sign);
  CHECK(Parse({"-o", "region=eu-west-1", "S3://bucket", "/mnt"}).ok());  // schemes ignore case
  // Anonymous requests and a source of keys exclude each other.
  CHECK_FALSE(Parse({"-o", "no_sign,profile=work", "s3://bucket", "/mnt"}).ok());
  CHECK_FALSE(Parse({"-o", "no_sign,credentials=/etc/keys", "s3://bucket", "/mnt"}).ok());
  auto files = Parse({"-o", "profile=work,credentials=/etc/b2ndfs/s3.keys", "s3://b", "/mnt"});
  REQUIRE(files.ok());
  CHECK(files->profile == "work");
  CHECK(files->credentials == "/etc/b2ndfs/s3.keys");
  // Keys never on the command line (it is visible in ps).
  auto keys = Parse({"-o", "secret_key=abc", "s3://bucket", "/mnt"});
  REQUIRE_FALSE(keys.ok());
  CHECK(keys.status().message().find("abc") == std::string::npos);
}

TEST_CASE("http sources take a .netrc file and a CA file; passwords in URLs are blanked") {
  auto http = Parse(
      {"-o", "credentials=/etc/b2ndfs/web.netrc,ca_file=/etc/ca.pem", "https://h/arrays/", "/mnt"});
  REQUIRE(http.ok());
  CHECK(http->credentials == "/etc/b2ndfs/web.netrc");
  CHECK(http->ca_file == "/etc/ca.pem");
  CHECK(Parse({"-o", "ca_file=/etc/ca.pem", "s3://bucket", "/mnt"}).ok());
  CHECK_FALSE(Parse({"-o", "ca_file=/etc/ca.pem", "/data", "/mnt"}).ok());
  CHECK_FALSE(Parse({"-o", "ca_file=", "https://h/", "/mnt"}).ok());

  std::string program = "b2ndfs", url = "https://reader:s3cret@host:8443/a@b/x.b2nd",
              plain = "http://host/x@y", user_only = "http://anna@host/", mnt = "/mnt";
  char* argv[] = {program.data(), url.data(), plain.data(), user_only.data(), mnt.data()};
  b2ndfs::app::HidePasswordsInArguments(5, argv);
  CHECK(std::string(argv[1]) == "https://reader:******@host:8443/a@b/x.b2nd");
  CHECK(std::string(argv[2]) == "http://host/x@y");  // an '@' in the path is no password
  CHECK(std::string(argv[3]) == "http://anna@host/");
  CHECK(std::string(argv[4]) == "/mnt");
}

TEST_CASE("MOUNTPOINT: a directory made absolute, or a /dev/fuse descriptor as /dev/fd/N") {
  using b2ndfs::app::PrepareMountpoint;
  char cwd[4096];
  REQUIRE(::getcwd(cwd, sizeof cwd) != nullptr);
  auto here = PrepareMountpoint(".");
  REQUIRE(here.ok());
  CHECK(*here == cwd);
  auto missing = PrepareMountpoint("/nonexistent/b2ndfs-mnt");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message() == "mountpoint /nonexistent/b2ndfs-mnt: does not exist");
  auto file = PrepareMountpoint("/proc/self/exe");  // this test, a regular file
  REQUIRE_FALSE(file.ok());
  CHECK(file.status().error_number() == ENOTDIR);
  // A descriptor of anything but /dev/fuse is refused, as is a closed one.
  const int null_fd = ::open("/dev/null", O_RDONLY);
  REQUIRE(null_fd >= 0);
  const std::string null_path = "/dev/fd/" + std::to_string(null_fd);
  auto not_fuse = PrepareMountpoint(null_path);
  REQUIRE_FALSE(not_fuse.ok());
  CHECK(not_fuse.status().error_number() == EBADF);
  ::close(null_fd);
  CHECK(PrepareMountpoint(null_path).status().error_number() == EBADF);
  const int fuse_fd = ::open("/dev/fuse", O_RDWR);
  if (fuse_fd >= 0) {  // (no /dev/fuse in a package build)
    const std::string fuse_path = "/dev/fd/" + std::to_string(fuse_fd);
    auto fuse = PrepareMountpoint(fuse_path);
    CHECK(fuse.ok());
    CHECK((fuse.ok() && *fuse == fuse_path));
    ::close(fuse_fd);
  }
}

TEST_CASE("a bad value names the option and the range it takes") {
  auto message = [](const std::string& option) {
    auto parsed = Parse({"-o", option, "s3://b/p", "/mnt"});
    return parsed.ok() ? std::string("accepted") : parsed.status().message();
  };
  CHECK(message("timeout=0.05") ==
        "bad value in 'timeout=0.05': expected seconds from 0.1 to 3600");
  CHECK(message("timeout=3601") ==
        "bad value in 'timeout=3601': expected seconds from 0.1 to 3600");
  CHECK(message("revalidate=86401") ==
        "bad value in 'revalidate=86401': expected seconds from 0 to 86400");
  CHECK(message("revalidate=1e3x") ==
        "bad value in 'revalidate=1e3x': expected seconds from 0 to 86400");
  CHECK(message("threads=0") == "bad value in 'threads=0': expected a number from 1 to 1024");
  CHECK(message("max_open=-1") ==
        "bad value in 'max_open=-1': expected a number from 0 to 1048576");
  CHECK(message("retries=x") == "bad value in 'retries=x': expected a number from 0 to 100");
  CHECK(message("cache_size=lots") == "bad value in 'cache_size=lots': expected e.g. 512M or 2G");
  CHECK(message("disk_cache_size=1K") ==
        "bad value in 'disk_cache_size=1K': expected e.g. 512M or 4G (at least 1M)");
  CHECK(message("log_access=root") == "bad value in 'log_access=root': expected owner or all");
  CHECK(message("endpoint=") == "'endpoint=' needs a value");
  CHECK(message("disk_cache=") == "'disk_cache=' needs a directory");
  CHECK(message("log_file=") == "'log_file=' needs a file name");
  CHECK(message("secret_key=abc").find("credentials are not taken on the command line") == 0);
  CHECK(message("bogus") ==
        "unknown option 'bogus' (neither one of b2ndfs's nor a libfuse mount option)");
  // Values at the ends of the ranges are taken.
  auto ends =
      Parse({"-o", "timeout=0.1,revalidate=86400,threads=1024,max_open=0", "s3://b/p", "/mnt"});
  REQUIRE(ends.ok());
  CHECK(ends->timeout == 0.1);
  CHECK(ends->revalidate == 86400);
  CHECK(ends->threads == 1024);
  CHECK(ends->max_open == 0);
}
