// store/file_catalog: what renders a container's meta.json, above the store.
//
// meta.json (README.md, "meta.json") says what the container is and which
// virtual files show it. The store knows the first, the views module the
// second, so the store never renders it: it fills a format::MetaJsonInput
// (everything but "files") when meta.json is first read, and the catalog
// given to Container::Open (views::Registry) adds its files and renders it.
// The container keeps the text (Container::meta_json(), charged to the
// block cache's budget). Opened without a catalog (a carrier's operand, a
// table's validity column), a container's meta.json lists no files.
// Thread-safety: RenderMetaJson may be called from any thread.
#pragma once

#include <string>

#include "b2ndfs/format/meta_json.h"

namespace b2ndfs::store {

class Container;

// One kind of virtual file, as meta.json's "files" lists it: name, shape,
// size; `absent` non-empty: not offered, and why; `note` non-empty: how the
// file is laid out or its bytes are made, where that is not evident
// (data.zarr/: sharded or not, and why; the previews' scaling).
using FileDescription = format::MetaJsonInput::FileKind;

class FileCatalog {
 public:
  virtual ~FileCatalog();  // defined in file_catalog.cc (the vtable's home)
  // meta.json of `container` (ok()): `input`, what the store knows of it,
  // with the catalog's files, rendered (format::RenderMetaJson).
  virtual std::string RenderMetaJson(const Container& container,
                                     format::MetaJsonInput input) const = 0;
};

}  // namespace b2ndfs::store
