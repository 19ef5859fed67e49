// remote/azure_tree: a source tree in an Azure Blob Storage container
// (az://ACCOUNT/CONTAINER[/PREFIX], or the container's own URL,
// https://ACCOUNT.blob.core.windows.net/CONTAINER[/PREFIX]).
//
// Addressing: https://ACCOUNT.blob.core.windows.net/CONTAINER/BLOB (the
// host of an https:// source, for the other Azure clouds), or under an
// endpoint= (Azurite, Azure Stack): the account's blob service URL as a
// connection string's BlobEndpoint names it; one that names the account
// neither as its host's first label nor as its path's last segment is
// path-style, ENDPOINT/ACCOUNT (as Azurite serves http://127.0.0.1:10000/
// devstoreaccount1).
// Listing: List Blobs with delimiter '/', NextMarker followed up to
// kMaxListPages pages; blob prefixes are directories, so a prefix with a
// container extension holding chunks.b2frame is a sparse frame. A PREFIX
// that names a blob is a single container; else it is a directory, which
// must hold something.
// Versions, caching and errors are those of every remote tree (see
// http_tree.h): size + ETag, If-Match on every Range GET (a changed blob:
// 412, ESTALE), answers reused for `revalidate` seconds; 403 EACCES with
// Azure's error code, 404 ENOENT.
// Credentials (src/remote/azure_auth.h): SharedKey, a SAS token, or none
// (no_sign). The key and the token stay in the signer and never reach a
// message, the stats or the mount table (root() is
// "az://ACCOUNT/CONTAINER/PREFIX").
// Thread-safety: every method may be called from any thread.
#pragma once

#include <memory>
#include <string>

#include "b2ndfs/remote/aws_credentials.h"
#include "b2ndfs/remote/http_tree.h"
#include "b2ndfs/source/tree.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::remote {

struct AzureUrl {
  std::string account;
  std::string container;
  std::string prefix;  // no leading '/'; a trailing '/' kept as given
  // The blob service the URL named ("https://ACCOUNT.blob.core.windows.net"
  // for an https:// source); empty for az://.
  std::string service;
};

// True for az:// URLs and http(s) URLs of a host ACCOUNT.blob.core.* (the
// public and national Azure clouds); the scheme and host are
// case-insensitive.
bool IsAzureUrl(const std::string& url);

// az://ACCOUNT/CONTAINER[/PREFIX] or https://ACCOUNT.blob.core.windows.net/
// CONTAINER[/PREFIX]. Accounts are 3 to 24 lower-case letters and digits
// (given in any case); containers 3 to 63 of [a-z0-9-] (or $root, $web). A
// query (a SAS token pasted with the URL) is refused: the command line is
// public.
Result<AzureUrl> ParseAzureUrl(const std::string& url);

// The container's URL, without a trailing '/' (see "Addressing").
Result<std::string> AzureContainerUrl(const AzureUrl& url, const std::string& endpoint);

// The List Blobs request for the blobs under `prefix`, from `marker` (empty:
// the first page); `max_results` > 0 asks for at most that many (else the
// service's page, 5,000).
std::string AzureListUrl(const std::string& container_url, const std::string& prefix,
                         const std::string& marker, int max_results = 0);

struct AzureOptions {
  RemoteOptions remote;
  std::string endpoint;          // empty: Azure, by the URL
  std::string credentials_file;  // credentials= (checked by the caller: not world-readable)
  bool no_sign = false;
  EnvLookup env;  // AZURE_STORAGE_*; null: the process environment
};

// The tree at an az:// (or https://ACCOUNT.blob.core...) URL; its root has
// answered. `origin` (optional) gets where the credentials came from, for
// a debug message (never the credentials).
Result<std::shared_ptr<source::Tree>> OpenAzureTree(const std::string& url,
                                                    const AzureOptions& options,
                                                    std::string* origin = nullptr);

}  // namespace b2ndfs::remote
