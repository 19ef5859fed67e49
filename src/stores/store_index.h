// Private to stores: what one version of a python-blosc2 store holds, parsed
// once (StoreTree keeps it in the block cache per store and version): every
// key as a path below the store's directory, where each leaf's bytes lie, and
// the meta.json of the store and of its groups. Immutable once built.
// An index that would hold more than kMaxIndexBytes is a verdict instead: a
// root with that problem and nothing else (small, and kept like any index, so
// that the store is not parsed again while its version stays).
#pragma once

#include <memory>
#include <string>

#include "b2ndfs/source/tree.h"
#include "b2ndfs/stores/embed_frame.h"
#include "index_types.h"

namespace b2ndfs::stores::internal {

std::string EmbedFilePath(const std::string& store_path);  // a .b2d's embed.b2e

// The names b2ndfs makes in a store's directories (README.md, "python-blosc2
// stores"): a key's name equal to one of them, or starting with "~", is
// shown with one more "~" in front ("meta.json" as "~meta.json", "~x" as
// "~~x"), so that no listing holds a name twice and every shown name leads
// back to its key (KeyName()).
constexpr const char* kGeneratedNames[] = {"meta.json", "columns.json", "valid"};
std::string ShownName(const std::string& name);
std::string KeyName(const std::string& shown);

// Parses one version of the store at `path` of `base`. A store whose content
// is wrong is an index whose root carries a problem; only trouble reaching
// the source (transient, or the store gone) is an error. The embed frame's
// decompressed units go to `units.cache`, named by units.identity followed by
// the signature of the file read (so by the version parsed).
Result<std::shared_ptr<const StoreIndex>> BuildStoreIndex(const source::Tree& base,
                                                          const std::string& path, StoreKind kind,
                                                          const EmbedUnitCache& units = {});

}  // namespace b2ndfs::stores::internal
