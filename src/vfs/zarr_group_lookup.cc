#include "zarr_group_lookup.h"

#include <map>
#include <set>
#include <utility>

#include "b2ndfs/source/tree.h"
#include "b2ndfs/util/log.h"
#include "b2ndfs/views/dir_group.h"
#include "b2ndfs/views/view.h"
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
Result<std::map<std::string, std::string>> Members(const source::Tree& tree,
                                                   const std::string& dir) {
  B2NDFS_ASSIGN_OR_RETURN(std::vector<source::TreeEntry> entries, tree.List(dir));
  std::set<std::string> taken;
  for (const auto& e : entries) taken.insert(e.name);
  std::map<std::string, std::pair<int, std::string>> chosen;
  for (const auto& e : entries) {
    const auto kind = MirroredKind(tree, dir + "/" + e.name, e.name, e.st);
    if (!kind || *kind != MirroredType::kContainer) continue;
    if (!HasContainerExtension(e.name)) {
      if (e.name[0] != '.') chosen.try_emplace(e.name, -1, e.name);
      continue;
    }
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
  std::map<std::string, std::string> members;
  for (auto& [variable, pick] : chosen) members.emplace(variable, dir + "/" + pick.second);
  return members;
}

}  // namespace

Result<GroupName> LookupDirGroup(const EntryFinder& entry_for, const source::Tree& tree,
                                 const views::Registry& views, const std::string& dir,
                                 const std::string& name) {
  if (name == ".zgroup" || name == ".zmetadata") {
    B2NDFS_ASSIGN_OR_RETURN(auto members, Members(tree, dir));
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
      B2NDFS_ASSIGN_OR_RETURN(text, views::DirZmetadata(group));
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
  return NotFound(dir + "/" + name);
}

}  // namespace b2ndfs::vfs
