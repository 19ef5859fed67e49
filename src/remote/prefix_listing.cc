#include "prefix_listing.h"

#include <algorithm>

#include "b2ndfs/remote/s3_tree.h"

namespace b2ndfs::remote {

PrefixPager::PrefixPager(std::string prefix, int64_t dir_mtime, FetchListedPage fetch)
    : prefix_(std::move(prefix)), dir_mtime_(dir_mtime), fetch_(std::move(fetch)) {}

Result<std::vector<IndexEntry>> PrefixPager::Next() {
  if (done_) return std::vector<IndexEntry>{};
  if (pages_ >= kMaxListPages) {
    return Status(EIO, "the listing of '" + prefix_ + "' has more than " +
                           std::to_string(kMaxListPages) + " pages");
  }
  auto page = fetch_(cursor_);
  if (!page.ok()) return page.status();
  ++pages_;
  std::vector<IndexEntry> files = std::move(held_);
  held_.clear();
  std::set<std::string> dirs;
  // The last name of the page in the store's order, where a directory "x"
  // is "x/".
  std::string last;
  for (auto& k : page->keys) {
    if (k.key.compare(0, prefix_.size(), prefix_) != 0) continue;
    std::string name = k.key.substr(prefix_.size());
    last = std::max(last, name);
    if (name.empty()) marked_ = true;
    // Empty names are "folder" marker objects; '/' cannot occur with the
    // delimiter, but a server could send it.
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
      continue;
    }
    files.push_back(IndexEntry{std::move(name), false, k.size, k.mtime, std::move(k.etag)});
  }
  for (const auto& p : page->prefixes) {
    if (p.size() <= prefix_.size() + 1 || p.compare(0, prefix_.size(), prefix_) != 0 ||
        p.back() != '/') {
      continue;
    }
    last = std::max(last, p.substr(prefix_.size()));
    const std::string name = p.substr(prefix_.size(), p.size() - prefix_.size() - 1);
    if (name == "." || name == ".." || name.find('/') != std::string::npos) continue;
    dirs.insert(name);
  }
  if (page->more) {
    if (!cursors_seen_.insert(page->next).second) {
      return Status(EIO, "the listing of '" + prefix_ + "' repeats itself");
    }
    cursor_ = page->next;
  } else {
    done_ = true;
  }
  // A name that is both a key and a prefix (a sparse frame, or a Data Lake
  // directory, which is both): the prefix wins.
  std::vector<IndexEntry> out;
  out.reserve(files.size() + dirs.size());
  for (auto& f : files) {
    if (dirs.count(f.name) != 0) continue;
    if (!done_ && f.name + "/" > last) {
      held_.push_back(std::move(f));
    } else {
      out.push_back(std::move(f));
    }
  }
  for (const auto& d : dirs) out.push_back(IndexEntry{d, true, -1, dir_mtime_});
  std::sort(out.begin(), out.end(),
            [](const IndexEntry& a, const IndexEntry& b) { return a.name < b.name; });
  listed_ += out.size();
  return out;
}

namespace {

class SinglePage final : public EntryPages {
 public:
  explicit SinglePage(std::function<Result<std::vector<IndexEntry>>()> list)
      : list_(std::move(list)) {}
  Result<std::vector<IndexEntry>> Next() override {
    if (done_) return std::vector<IndexEntry>{};
    auto page = list_();
    if (page.ok()) done_ = true;
    return page;
  }
  bool done() const override { return done_; }

 private:
  std::function<Result<std::vector<IndexEntry>>()> list_;
  bool done_ = false;
};

class PrefixPages final : public EntryPages {
 public:
  PrefixPages(std::string path, std::string prefix, int64_t dir_mtime, FetchListedPage fetch,
              std::string missing, bool marker_makes_directory)
      : path_(std::move(path)),
        missing_(std::move(missing)),
        marker_makes_directory_(marker_makes_directory),
        pager_(std::move(prefix), dir_mtime, std::move(fetch)) {}
  Result<std::vector<IndexEntry>> Next() override {
    auto page = pager_.Next();
    if (!page.ok()) {
      return Status(page.status().error_number(), path_ + ": " + page.status().message());
    }
    if (pager_.done() && pager_.listed() == 0 && !missing_.empty() &&
        !(marker_makes_directory_ && pager_.marked())) {
      return Status(ENOENT, missing_);
    }
    return page;
  }
  bool done() const override { return pager_.done(); }

 private:
  const std::string path_;
  const std::string missing_;
  const bool marker_makes_directory_;
  PrefixPager pager_;
};

}  // namespace

std::unique_ptr<EntryPages> OnePage(std::function<Result<std::vector<IndexEntry>>()> list) {
  return std::make_unique<SinglePage>(std::move(list));
}

std::unique_ptr<EntryPages> MakePrefixPages(std::string path, std::string prefix, int64_t dir_mtime,
                                            FetchListedPage fetch, std::string missing,
                                            bool marker_makes_directory) {
  return std::make_unique<PrefixPages>(std::move(path), std::move(prefix), dir_mtime,
                                       std::move(fetch), std::move(missing),
                                       marker_makes_directory);
}

Result<bool> PrefixHasEntries(const std::string& prefix, const FetchListedPage& fetch,
                              bool marker_makes_directory) {
  B2NDFS_ASSIGN_OR_RETURN(const ListedPage page, fetch(""));
  for (const auto& k : page.keys) {
    if (k.key.compare(0, prefix.size(), prefix) != 0) continue;
    if (k.key.size() > prefix.size() || marker_makes_directory) return true;
  }
  for (const auto& p : page.prefixes) {
    if (p.size() > prefix.size() && p.compare(0, prefix.size(), prefix) == 0) return true;
  }
  // Only the marker came, of the two asked for: nothing else is there,
  // unless the server pages by one.
  return page.more && !page.keys.empty();
}

}  // namespace b2ndfs::remote
