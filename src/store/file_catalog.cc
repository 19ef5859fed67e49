// store/file_catalog: the interface's one out-of-line member, so that its
// vtable is emitted in one object (include/b2ndfs/store/file_catalog.h).
#include "b2ndfs/store/file_catalog.h"

namespace b2ndfs::store {

FileCatalog::~FileCatalog() = default;

}  // namespace b2ndfs::store
