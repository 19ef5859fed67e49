#include "zarr_group_lookup.h"

#include <map>
#include <optional>
#include <set>
#include <utility>

#include "b2ndfs/source/tree.h"
#include "b2ndfs/util/log.h"
#include "b2ndfs/views/view.h"
#include "b2ndfs/views/zarr.h"
#include "mirror.h"

namespace b2ndfs::vfs {
namespace {

// In HasContainerExtension's order: NAME.b2nd wins over NAME.b2frame, ...
constexpr const char* kExtensions[] = {".b2nd", ".b2frame", ".b2f", ".b2", ".caterva", ".cat"};

struct Opened {
  std::shared_ptr<Generation> generation;
  std::shared_ptr<const store::Container> container;
};

Result<Opened> OpenContainer(const EntryFinder& entry_for, const std::string& path) {
  Opened opened;
  B2NDFS_ASSIGN_OR_RETURN(opened.generation, entry_for(path)->Current());
  B2NDFS_ASSIGN_OR_RETURN(opened.container, opened.generation->Container());
  return opened;
}

GroupName Unlisted(Opened opened, std::shared_ptr<const views::Node> view) {
  return GroupName{std::move(opened.generation), std::move(opened.container), std::move(view)};
}

// The directory's containers by variable name, in name order: a name that
// is an entry of the directory itself is not a variable, and of two
// containers of one name the extension first in kExtensions wins. A
// container without an extension (a python-blosc2 store's leaf, which the
// tree calls a container) is the variable of its own name: its directory
// answers the chunk keys (views/zarr.cc).
// The directory's Zarr group: its members by variable name, and whether
// it is a table's (views::DirTable).
struct GroupMembers {
  std::map<std::string, std::string> members;  // variable -> tree path
  views::DirTable::Kind kind = views::DirTable::Kind::kNone;
  std::string valid_rows;    // kCTable: the table's _valid_rows leaf
  bool ctable_root = false;  // the CTable's own directory (not its _cols/)
};

bool IsStoreLeaf(const source::Tree& tree, const std::string& path, const std::string& name,
                 const struct stat& st) {
  const auto kind = MirroredKind(tree, path, name, st);
  return kind && *kind == MirroredType::kContainer && !HasContainerExtension(name);
}

// A CTable's directory, as the store tree shows it (stores/store_tree.h):
// its columns.json, _cols/ and the leaf _valid_rows.
bool IsCTableDir(const source::Tree& tree, const std::string& dir,
                 const std::vector<source::TreeEntry>& entries) {
  bool columns = false, cols = false, valid = false;
  for (const auto& e : entries) {
    if (e.name == "columns.json") columns = S_ISREG(e.st.st_mode);
    if (e.name == "_cols") cols = S_ISDIR(e.st.st_mode);
    if (e.name == "_valid_rows") valid = IsStoreLeaf(tree, dir + "/" + e.name, e.name, e.st);
  }
  return columns && cols && valid;
}

// The CTable whose _cols/ is `dir` or holds it (a nested column's group,
// _cols/pos for the column pos.z), when there is one.
std::optional<std::string> CTableOfCols(const source::Tree& tree, const std::string& dir) {
  for (size_t end = dir.size(); end != std::string::npos && end > 0;) {
    const size_t slash = dir.rfind('/', end - 1);
    if (slash == std::string::npos) break;
    if (dir.compare(slash + 1, end - slash - 1, "_cols") == 0) {
      const std::string parent = dir.substr(0, slash);
      Result<std::vector<source::TreeEntry>> entries = tree.List(parent);
      if (entries.ok() && IsCTableDir(tree, parent, *entries)) return parent;
    }
    end = slash;
  }
  return std::nullopt;
}

Result<GroupMembers> Members(const source::Tree& tree, const std::string& dir) {
  B2NDFS_ASSIGN_OR_RETURN(std::vector<source::TreeEntry> entries, tree.List(dir));
  GroupMembers group;
  std::set<std::string> taken;
  for (const auto& e : entries) taken.insert(e.name);
  std::map<std::string, std::pair<int, std::string>> chosen;
  bool store_leaves = false, extensions = false;
  for (const auto& e : entries) {
    const auto kind = MirroredKind(tree, dir + "/" + e.name, e.name, e.st);
    if (!kind || *kind != MirroredType::kContainer) continue;
    if (!HasContainerExtension(e.name)) {
      if (e.name[0] != '.') chosen.try_emplace(e.name, -1, e.name);
      store_leaves = true;
      continue;
    }
    extensions = true;
    for (int rank = 0; rank < static_cast<int>(std::size(kExtensions)); ++rank) {
      const std::string ext = kExtensions[rank];
      if (e.name.size() <= ext.size() || !e.name.ends_with(ext)) continue;
      const std::string variable = e.name.substr(0, e.name.size() - ext.size());
      if (variable[0] == '.' || taken.count(variable)) break;
      auto [it, fresh] = chosen.try_emplace(variable, rank, e.name);
      if (!fresh && rank < it->second.first) it->second = {rank, e.name};
      break;
    }
  }
  if (IsCTableDir(tree, dir, entries)) {
    // A CTable's directory: its columns (the leaves right below _cols/,
    // which LookupDirGroup finds by name here) and _valid_rows; not _meta.
    group.kind = views::DirTable::Kind::kCTable;
    group.valid_rows = dir + "/_valid_rows";
    group.ctable_root = true;
    chosen.erase("_meta");
    B2NDFS_ASSIGN_OR_RETURN(std::vector<source::TreeEntry> cols, tree.List(dir + "/_cols"));
    for (const auto& e : cols) {
      if (e.name[0] == '.' || taken.count(e.name)) continue;
      if (IsStoreLeaf(tree, dir + "/_cols/" + e.name, e.name, e.st)) {
        chosen.try_emplace(e.name, -1, "_cols/" + e.name);
      }
    }
  } else if (auto table = CTableOfCols(tree, dir)) {
    group.kind = views::DirTable::Kind::kCTable;
    group.valid_rows = *table + "/_valid_rows";
  } else if (store_leaves && !extensions) {
    group.kind = views::DirTable::Kind::kStoreGroup;
  }
  for (auto& [variable, pick] : chosen) group.members.emplace(variable, dir + "/" + pick.second);
  return group;
}

// The rows of the CTable whose _valid_rows is at `path` (-1: not a 1-D
// array that can be read now).
int64_t CTableRows(const EntryFinder& entry_for, const std::string& path) {
  Result<Opened> opened = OpenContainer(entry_for, path);
  if (!opened.ok() || !opened->container->ok()) return -1;
  const auto& shape = opened->container->layout().shape();
  return shape.size() == 1 ? shape[0] : -1;
}

// A column of the CTable whose directory is `dir`, looked up as `dir/name`
// (its variable in the table's group): the leaf _cols/NAME.
// `listed`: the directory's entries where they were listed (a tree whose
// listing costs one stat), which must hold _cols/ and columns.json.
Result<GroupName> CTableColumn(const EntryFinder& entry_for, const source::Tree& tree,
                               const views::Registry& views, const std::string& dir,
                               const std::string& name,
                               const std::optional<std::map<std::string, struct stat>>& listed) {
  if (listed && (!listed->count("_cols") || !listed->count("columns.json"))) {
    return NotFound(dir + "/" + name);
  }
  // One stat of a name that is not there; the directory is listed only
  // when _cols/NAME is a leaf.
  const std::string path = dir + "/_cols/" + name;
  Result<struct stat> st = tree.Stat(path);
  if (!st.ok()) {
    // _cols/ that may not be searched is no table's.
    const bool none = source::IsGone(st.status()) || st.status().error_number() == EACCES;
    return none ? NotFound(dir + "/" + name) : st.status();
  }
  if (!IsStoreLeaf(tree, path, name, *st)) return NotFound(dir + "/" + name);
  B2NDFS_ASSIGN_OR_RETURN(std::vector<source::TreeEntry> entries, tree.List(dir));
  if (!IsCTableDir(tree, dir, entries)) return NotFound(dir + "/" + name);
  B2NDFS_ASSIGN_OR_RETURN(Opened opened, OpenContainer(entry_for, path));
  if (!opened.container->ok()) return NotFound(dir + "/" + name);
  B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const views::Node> view,
                          views::DirVariable(views, *opened.container, name));
  return Unlisted(std::move(opened), std::move(view));
}

}  // namespace

Result<GroupName> LookupDirGroup(const EntryFinder& entry_for, const source::Tree& tree,
                                 const views::Registry& views, const std::string& dir,
                                 const std::string& name) {
  if (name == ".zgroup" || name == ".zmetadata") {
    B2NDFS_ASSIGN_OR_RETURN(GroupMembers found, Members(tree, dir));
    const auto& members = found.members;
    if (members.empty()) {
      // xarray turns the missing group into "No such file or directory" for
      // a directory that exists: the log says what it is.
      LogOnce("dir_group:" + dir, LogLevel::kInfo,
              (dir.empty() ? std::string("the mount's root") : dir) +
                  " holds no container, so it is no Zarr group (no .zgroup or .zmetadata): "
                  "xarray.open_zarr of it fails with 'No such file or directory'");
      return NotFound(dir + "/" + name);
    }
    if (members.size() > views::kDirGroupMaxContainers) {
      LogOnce("dir_group:" + dir, LogLevel::kInfo,
              dir + " holds " + std::to_string(members.size()) + " containers, more than the " +
                  std::to_string(views::kDirGroupMaxContainers) +
                  " a Zarr group of a directory opens: no .zgroup or .zmetadata");
      return NotFound(dir + "/" + name);
    }
    std::vector<views::DirMember> group;
    std::optional<Opened> host;
    for (const auto& [variable, path] : members) {
      // A container that cannot be read now fails the lookup (the kernel
      // must not keep a group without it); a broken one is left out.
      B2NDFS_ASSIGN_OR_RETURN(Opened opened, OpenContainer(entry_for, path));
      if (!opened.container->ok() || !views::IsZarrVariable(*opened.container)) continue;
      group.push_back(views::DirMember{variable, opened.container});
      if (!host) host = std::move(opened);
      if (name == ".zgroup") break;  // one member makes a group
    }
    if (!host) return NotFound(dir + "/" + name);
    std::string text = "{\n  \"zarr_format\": 2\n}\n";
    if (name == ".zmetadata") {
      views::DirTable table{found.kind};
      table.rows_only = found.ctable_root;
      if (found.kind == views::DirTable::Kind::kCTable) {
        table.rows = CTableRows(entry_for, found.valid_rows);
      }
      B2NDFS_ASSIGN_OR_RETURN(text, views::DirZmetadata(group, table));
    }
    return Unlisted(std::move(*host), views::MakeTextFile(name, std::move(text)));
  }
  if (name.empty() || name[0] == '.') return NotFound(dir + "/" + name);
  // A remote directory's names come from its listing (one request per
  // `revalidate=`), not from a request per extension.
  std::optional<std::map<std::string, struct stat>> listed;
  if (tree.costs().listing_costs_one_stat) {
    B2NDFS_ASSIGN_OR_RETURN(std::vector<source::TreeEntry> entries, tree.List(dir));
    listed.emplace();
    for (auto& e : entries) listed->emplace(std::move(e.name), e.st);
  }
  for (const char* ext : kExtensions) {
    const std::string path = dir + "/" + name + ext;
    Result<struct stat> st = Status(ENOENT, path);
    if (listed) {
      if (auto it = listed->find(name + ext); it != listed->end()) st = it->second;
    } else {
      st = tree.Stat(path);
    }
    if (!st.ok()) {
      if (source::IsGone(st.status())) continue;
      return st.status();
    }
    const auto kind = MirroredKind(tree, path, name + ext, *st);
    if (!kind || *kind != MirroredType::kContainer) continue;
    B2NDFS_ASSIGN_OR_RETURN(Opened opened, OpenContainer(entry_for, path));
    if (!opened.container->ok()) return NotFound(dir + "/" + name);
    B2NDFS_ASSIGN_OR_RETURN(std::shared_ptr<const views::Node> view,
                            views::DirVariable(views, *opened.container, name));
    return Unlisted(std::move(opened), std::move(view));
  }
  // A CTable's directory: its columns are variables of its group.
  if (name != "_meta" && name != "_cols") {
    return CTableColumn(entry_for, tree, views, dir, name, listed);
  }
  return NotFound(dir + "/" + name);
}

}  // namespace b2ndfs::vfs
