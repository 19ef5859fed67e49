// The --help text (README.md, "Command line", says the same at length).
#include <string>

#include "b2ndfs/remote/http_client.h"
#include "b2ndfs/vfs/filesystem.h"
#include "b2ndfs/views/view.h"
#include "options.h"

namespace b2ndfs::app {

namespace {

// "meta, data, npy, ..." wrapped to the help's column.
std::string ViewKindList() {
  std::string out, line;
  for (const auto& [kind, files] : views::Registry::Kinds()) {
    if (!line.empty() && line.size() + kind.size() + 2 > 48) {
      out += line + "\n                         ";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + kind + ",";
  }
  line.pop_back();
  return out + line;
}

}  // namespace

std::string Usage(const std::string& program) {
  return "usage: " + program +
         " [-f] [-d] [-s] [-o OPTION[,OPTION...]] SOURCE MOUNTPOINT\n"
         "       " +
         program +
         " --help | --version\n"
         "\n"
         "Mounts the Blosc2 b2nd containers under SOURCE (a directory, or one container)\n"
         "read-only at MOUNTPOINT, each as a directory of plain files. SOURCE may be\n"
         "remote: http(s)://HOST/PATH/ (a directory index), http(s)://HOST/FILE.b2nd, or\n"
         "s3://BUCKET[/PREFIX] (AWS, or any S3-compatible server with endpoint=), or\n"
         "az://ACCOUNT/CONTAINER[/PREFIX] (Azure Blob Storage); in\n"
         "fstab, add _netdev so that it is mounted once the network is up.\n"
         "\n"
         "options:\n"
         "  -f                     stay in the foreground (default: daemonize once mounted)\n"
         "  -d                     debug: foreground, libfuse logs every request,\n"
         "                         log_level=debug (default: off)\n"
         "  -s                     single-threaded FUSE loop (default: multi-threaded)\n"
         "  -o cache_size=SIZE     bytes of decompressed blocks to keep (K, M, G, T suffixes);\n"
         "                         default: 1/8 of RAM, at least 64M, at most 4G\n"
         "  -o threads=N           decompression workers, 1 to 1024\n"
         "                         (default: the number of CPUs)\n"
         "  -o max_threads=N       FUSE request threads, 1 to 1024 (default: twice threads,\n"
         "                         at least 10, at most 64)\n"
         "  -o max_open=N          containers kept open at once, least recently used closed\n"
         "                         first; their metadata counts in cache_size\n"
         "                         (default " +
         std::to_string(vfs::kDefaultMaxOpen) +
         ")\n"
         "  -o readahead=SIZE      how far ahead of a sequential reader blocks are\n"
         "                         decompressed (default 8M, remote files 4x that;\n"
         "                         0 turns it off)\n"
         "  -o no_hugepages        block memory in 4 KiB pages only (default: 2 MiB slabs\n"
         "                         ask for transparent huge pages)\n"
         "  -o timeout=SECONDS     remote sources: the longest a request may take, retries\n"
         "                         included; then the read fails with EIO (default 30)\n"
         "  -o retries=N           remote sources: further attempts after a 5xx, 429 or a\n"
         "                         connection error, with backoff (default 3)\n"
         "  -o connections=N       remote sources: connections to the server, so requests\n"
         "                         in flight at once (default " +
         std::to_string(remote::kDefaultConnections) +
         ")\n"
         "  -o prefetch_heads=N    remote sources: in a container of at most N chunks, the\n"
         "                         first data read fetches every chunk head (block offsets)\n"
         "                         with its own, in one round trip (default " +
         std::to_string(store::StoreContext{}.remote_heads_max_chunks) +
         "; 0: each with the first read of its chunk)\n"
         "  -o revalidate=SECONDS  remote sources: how long a listing or an object's\n"
         "                         attributes are reused before the server is asked again\n"
         "                         (default 1; 0: every lookup asks)\n"
         "  -o endpoint=URL        s3: an S3-compatible server, path-style addressing\n"
         "                         (default: AWS, https://BUCKET.s3.REGION.amazonaws.com)\n"
         "  -o region=REGION       s3: the signing region (default: AWS_REGION,\n"
         "                         AWS_DEFAULT_REGION, ~/.aws/config, else us-east-1)\n"
         "  -o profile=NAME        s3: the profile of ~/.aws/credentials (default: the\n"
         "                         AWS_* environment variables, else AWS_PROFILE or default)\n"
         "  -o credentials=FILE    s3: keys from FILE (the ~/.aws/credentials format);\n"
         "                         http(s): user names and passwords by host from FILE\n"
         "                         (the .netrc format); not readable by every user\n"
         "  -o ca_file=FILE        https: trust the certificate authorities in FILE (PEM)\n"
         "                         instead of the system's, e.g. a private CA\n"
         "  -o no_sign             s3: anonymous requests, for public buckets\n"
         "  az://ACCOUNT/CONTAINER[/PREFIX]: endpoint=URL the blob service (Azurite,\n"
         "                         Azure Stack); credentials=FILE with account_key= or\n"
         "                         sas_token= (default: AZURE_STORAGE_KEY, else\n"
         "                         AZURE_STORAGE_SAS_TOKEN); no_sign for public containers\n"
         "  -o disk_cache=DIR      remote sources: keep fetched ranges and computed pyramid\n"
         "                         blocks in DIR, checked by ETag, so that the next mount is\n"
         "                         warm (one daemon per DIR)\n"
         "  -o disk_cache_size=SIZE  remote sources: the bound of disk_cache, least recently\n"
         "                         used ranges and blocks deleted first (default 1G)\n"
         "  -o log_level=LEVEL     error, warning, info or debug (default: info)\n"
         "  -o log_file=PATH       append messages to PATH instead of syslog, reopened on\n"
         "                         SIGHUP (logrotate); the last 500 are also in\n"
         "                         MOUNTPOINT/.b2ndfs/log (default: syslog once detached)\n"
         "  -o log_access=WHO      who may read MOUNTPOINT/.b2ndfs/log, which names other\n"
         "                         users' files: owner (the user b2ndfs runs as, mode\n"
         "                         0400) or all (whoever may read the root, as stats)\n"
         "                         (default: owner)\n"
         "  -o views=KIND[,KIND...]  only these kinds of virtual files in container\n"
         "                         directories, for mounts that indexers and backups\n"
         "                         walk: " +
         ViewKindList() +
         "\n"
         "                         (default: all)\n"
         "  -o ino32               inode numbers of the source's files and directories\n"
         "                         below 2^32, for 32-bit programs (default: above 2^32;\n"
         "                         unique either way while mounted)\n"
         "  -o allow_other         let other users in (default: only the mounting user);\n"
         "                         default_permissions is added, so permission bits apply\n"
         "  -o OPTION              a libfuse mount option (allow_root, auto_unmount,\n"
         "                         fsname=, nosuid, ...); fstab/systemd options (_netdev,\n"
         "                         nofail, noauto, x-systemd.*, defaults) are ignored;\n"
         "                         any other option is an error\n"
         "  -h, --help             this text\n"
         "  -V, --version          the version\n";
}

}  // namespace b2ndfs::app
