#pragma once
// An in-memory source::Tree for driving vfs::Filesystem without FUSE: its
// containers are byte strings, and a test can change the tree under the
// filesystem (replace, remove), cut it off (an outage: every call fails with
// an errno), make it throw, slow it down, and count what it was asked.
// A container's old version reads on after a replacement as a local file
// held open does, or (old_versions_readable = false) answers ESTALE as a
// server that no longer has it does.
// Thread-safety: any thread.
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "b2ndfs/source/tree.h"

namespace b2ndfs::testing {

using Bytes = std::vector<uint8_t>;

class FakeTree : public source::Tree {
 public:
  explicit FakeTree(bool remote = false) : state_(std::make_shared<State>()), remote_(remote) {
    state_->entries[kRoot] = Entry{true, nullptr, 1};
  }

  static constexpr const char* kRoot = "/fake";

  // NAME is relative to the root ("a.b2nd", "run1/x.b2nd").
  void PutDir(const std::string& name) {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->entries[Path(name)] = Entry{true, nullptr, ++state_->clock};
  }
  // A file or container (by its extension), replacing any previous version.
  void PutFile(const std::string& name, Bytes bytes) {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->entries[Path(name)] =
        Entry{false, std::make_shared<const Bytes>(std::move(bytes)), ++state_->clock};
  }
  void Remove(const std::string& name) {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->entries.erase(Path(name));
  }
  // Every call fails with `error` until SetOutage(0).
  void SetOutage(int error) { state_->outage.store(error); }
  void SetDelay(std::chrono::milliseconds delay) { state_->delay_ms.store(delay.count()); }
  void SetOldVersionsReadable(bool readable) { state_->old_readable.store(readable); }
  // Every call throws std::runtime_error (a bug deep in a source) until
  // SetThrowing(false).
  void SetThrowing(bool throwing) { state_->throwing.store(throwing); }

  // OpenList() hands out pages of at most `n` entries (0: the whole
  // listing as one page).
  void SetPageSize(size_t n) { state_->page_size.store(n); }

  // What the tree was asked.
  int64_t pages() const { return state_->pages.load(); }
  int64_t probes() const { return state_->probes.load(); }
  int64_t reads() const { return state_->reads.load(); }
  int64_t bytes_read() const { return state_->bytes_read.load(); }
  int64_t stats() const { return state_->stats.load(); }
  // Version holds alive (ByteSource::HoldVersion tokens).
  int64_t holds() const { return state_->holds.load(); }

  const std::string& root() const override { return root_; }

  Result<struct stat> Stat(const std::string& path) const override {
    state_->stats++;
    B2NDFS_RETURN_IF_ERROR(Fault());
    std::lock_guard<std::mutex> lock(state_->mutex);
    auto it = state_->entries.find(path);
    if (it == state_->entries.end()) return Status(ENOENT, path + ": no such file");
    return StatOf(it->second);
  }

  Result<std::vector<source::TreeEntry>> List(const std::string& path) const override {
    B2NDFS_RETURN_IF_ERROR(Fault());
    std::lock_guard<std::mutex> lock(state_->mutex);
    auto dir = state_->entries.find(path);
    if (dir == state_->entries.end()) return Status(ENOENT, path);
    if (!dir->second.directory) return Status(ENOTDIR, path);
    std::vector<source::TreeEntry> out;
    const std::string prefix = path + "/";
    for (auto it = state_->entries.lower_bound(prefix);
         it != state_->entries.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      const std::string name = it->first.substr(prefix.size());
      if (name.find('/') != std::string::npos) continue;
      out.push_back(source::TreeEntry{name, StatOf(it->second)});
    }
    return out;
  }

  Result<std::unique_ptr<source::ListCursor>> OpenList(const std::string& path) const override {
    if (state_->page_size.load() == 0) return source::Tree::OpenList(path);
    B2NDFS_ASSIGN_OR_RETURN(std::vector<source::TreeEntry> all, List(path));
    return std::unique_ptr<source::ListCursor>(
        std::make_unique<Pages>(std::move(all), state_->page_size.load(), state_));
  }

  Result<source::Signature> Probe(const std::string& path) const override {
    state_->probes++;
    B2NDFS_RETURN_IF_ERROR(Fault());
    std::lock_guard<std::mutex> lock(state_->mutex);
    auto it = state_->entries.find(path);
    if (it == state_->entries.end()) return Status(ENOENT, path + ": no such file");
    return SignatureOf(it->second);
  }

  Result<std::shared_ptr<const source::ByteSource>> OpenContainer(
      const std::string& path, const source::Signature*) const override {
    B2NDFS_RETURN_IF_ERROR(Fault());
    std::lock_guard<std::mutex> lock(state_->mutex);
    auto it = state_->entries.find(path);
    if (it == state_->entries.end()) return Status(ENOENT, path + ": no such file");
    if (it->second.directory) return Status(EISDIR, path + ": sparse frames are not faked");
    return std::shared_ptr<const source::ByteSource>(
        std::make_shared<Source>(state_, path, it->second, remote_));
  }

  Result<std::shared_ptr<const source::PlainFile>> OpenFile(
      const std::string& path) const override {
    B2NDFS_RETURN_IF_ERROR(Fault());
    std::lock_guard<std::mutex> lock(state_->mutex);
    auto it = state_->entries.find(path);
    if (it == state_->entries.end()) return Status(ENOENT, path);
    return std::shared_ptr<const source::PlainFile>(std::make_shared<File>(it->second));
  }

  std::string StatsJson() const override { return std::string(); }
  // What costs() declares instead of a local (or remote) tree's; call it
  // before the tree is used.
  void SetCosts(source::TreeCosts costs) { costs_ = costs; }
  source::TreeCosts costs() const override {
    if (costs_) return *costs_;
    return source::TreeCosts{.requests_may_stall = remote_, .listing_costs_one_stat = remote_};
  }

 private:
  struct Entry {
    bool directory = false;
    std::shared_ptr<const Bytes> bytes;
    int64_t version = 0;
  };
  struct State {
    std::mutex mutex;
    std::map<std::string, Entry> entries;
    int64_t clock = 1;
    std::atomic<int> outage{0};
    std::atomic<int64_t> delay_ms{0};
    std::atomic<bool> old_readable{true};
    std::atomic<bool> throwing{false};
    std::atomic<int64_t> probes{0}, reads{0}, bytes_read{0}, stats{0}, holds{0}, pages{0};
    std::atomic<size_t> page_size{0};
  };

  static source::Signature SignatureOf(const Entry& e) {
    source::Signature s;
    s.size = e.bytes ? static_cast<int64_t>(e.bytes->size()) : 0;
    s.tag = std::to_string(e.version);
    return s;
  }
  static struct stat StatOf(const Entry& e) {
    struct stat st {};
    st.st_mode = e.directory ? (S_IFDIR | 0755) : (S_IFREG | 0644);
    st.st_size = e.bytes ? static_cast<off_t>(e.bytes->size()) : 0;
    st.st_mtim.tv_sec = e.version;
    st.st_ctim.tv_sec = e.version;
    st.st_nlink = 1;
    return st;
  }
  std::string Path(const std::string& name) const { return root_ + "/" + name; }
  Status Fault() const { return FaultOf(*state_); }
  static Status FaultOf(State& state) {
    const int64_t delay = state.delay_ms.load();
    if (delay > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    if (state.throwing.load()) throw std::runtime_error("fake source bug");
    const int error = state.outage.load();
    if (error != 0) return Status(error, std::string("fake outage: ") + std::strerror(error));
    return Status::Ok();
  }

  // A listing handed out `size` entries at a time (each page counted).
  class Pages : public source::ListCursor {
   public:
    Pages(std::vector<source::TreeEntry> all, size_t size, std::shared_ptr<State> state)
        : all_(std::move(all)), size_(size), state_(std::move(state)) {}
    Result<std::vector<source::TreeEntry>> Next() override {
      state_->pages++;
      B2NDFS_RETURN_IF_ERROR(FaultOf(*state_));  // a page is a call like any other
      const size_t end = std::min(all_.size(), next_ + size_);
      std::vector<source::TreeEntry> page(all_.begin() + next_, all_.begin() + end);
      next_ = end;
      return page;
    }
    bool done() const override { return next_ == all_.size(); }

   private:
    const std::vector<source::TreeEntry> all_;
    const size_t size_;
    const std::shared_ptr<State> state_;
    size_t next_ = 0;
  };

  class Source : public source::ByteSource {
   public:
    Source(std::shared_ptr<State> state, std::string path, Entry entry, bool remote)
        : state_(std::move(state)),
          path_(std::move(path)),
          entry_(std::move(entry)),
          signature_(SignatureOf(entry_)),
          remote_(remote) {}
    const std::string& name() const override { return path_; }
    bool sparse() const override { return false; }
    const source::Signature& signature() const override { return signature_; }
    Result<int64_t> PartSize(int64_t part) const override {
      if (part != source::kFramePart) return Status(EINVAL, "no chunk files");
      return static_cast<int64_t>(entry_.bytes->size());
    }
    Status Read(int64_t part, int64_t offset, size_t length, uint8_t* out) const override {
      state_->reads++;
      B2NDFS_RETURN_IF_ERROR(FaultOf(*state_));
      if (part != source::kFramePart) return Status(EINVAL, "no chunk files");
      if (!state_->old_readable.load() && !Current()) {
        stale_ = true;
        return Status(ESTALE, path_ + ": the server no longer has this version");
      }
      if (offset < 0 || static_cast<size_t>(offset) + length > entry_.bytes->size()) {
        return Status(EIO, path_ + ": read past the end");
      }
      std::memcpy(out, entry_.bytes->data() + offset, length);
      state_->bytes_read += static_cast<int64_t>(length);
      return Status::Ok();
    }
    bool found_stale() const override { return stale_.load(); }
    source::CostProfile cost() const override {
      source::CostProfile cost;
      if (remote_) {
        cost.batch_reads = true;
        cost.latency = source::CostProfile::Latency::kNetwork;
      }
      return cost;
    }
    std::shared_ptr<const void> HoldVersion() const override {
      struct Token {
        explicit Token(std::shared_ptr<State> s) : state(std::move(s)) { state->holds++; }
        ~Token() { state->holds--; }
        std::shared_ptr<State> state;
      };
      return std::make_shared<const Token>(state_);
    }

   private:
    bool Current() const {
      std::lock_guard<std::mutex> lock(state_->mutex);
      auto it = state_->entries.find(path_);
      return it != state_->entries.end() && it->second.version == entry_.version;
    }
    std::shared_ptr<State> state_;
    std::string path_;
    Entry entry_;
    source::Signature signature_;
    bool remote_;
    mutable std::atomic<bool> stale_{false};
  };

  class File : public source::PlainFile {
   public:
    explicit File(Entry entry) : entry_(std::move(entry)), version_(SignatureOf(entry_)) {}
    const source::Signature& version() const override { return version_; }
    Result<size_t> ReadUpTo(int64_t offset, uint8_t* out, size_t length) const override {
      const Bytes& b = *entry_.bytes;
      if (offset < 0 || static_cast<size_t>(offset) >= b.size()) return size_t{0};
      const size_t n = std::min(length, b.size() - static_cast<size_t>(offset));
      std::memcpy(out, b.data() + offset, n);
      return n;
    }

   private:
    Entry entry_;
    source::Signature version_;
  };

  std::shared_ptr<State> state_;
  const std::string root_ = kRoot;
  const bool remote_;
  std::optional<source::TreeCosts> costs_;
};

}  // namespace b2ndfs::testing
