// Private to vfs: container entries (one per container path), their
// generations (one per version of the source) and the LRU of opened
// containers.
//
// Lifetimes (who owns whom):
// - A ContainerEntry is owned by the kernel-held PathNode of its container
//   directory and by the filesystem's short list of recently used entries;
//   it owns its *current* generation.
// - A Generation is owned by its entry while current, and by every open file
//   and directory listing of it (FileHandle, ViewListing), so an open file
//   keeps its version to the end whatever happens to the container. It owns
//   its ByteSource (which names the version in every read), its block of
//   inode numbers (registered in the GenerationIndex while it lives) and,
//   while files of it are open, the source's version hold (HoldVersion: a
//   local frame's descriptor). When it goes, its cached blocks go with it.
// - Its opened store::Container is owned by the OpenContainers LRU and by
//   open files; the generation reopens it from its own source on demand.
// What ends a generation: a probe that finds another signature, a read that
// found the source holds another version (found_stale), or a source that
// says the container is gone (IsGone). Any other error (a server down,
// timeouts, EIO, EMFILE) is returned to the caller who hit it and forgotten:
// the generation and its cached blocks stay, and its files keep serving what
// the cache holds. A carrier served evaluated (store/operands.h) is also
// ended by a change of any operand it read: each probe of it probes them too
// (carrier_operands.h), and a reopening that finds other operand versions is stale.
// A carrier's operands are containers of the mount like any other: each is
// used through its path's entry and generation (ContainerEntry::ForOperand),
// so a carrier's read of an operand and a direct read of it share the
// version's cache_id and cached blocks, and an operand's version ends by the
// rule above. An operand that is itself a carrier is evaluated again for the
// carrier that reads it (its evaluation depends on the chain that led to it:
// store/operands.h), from its generation's source and cache_id.
// Lock order: ContainerEntry::mutex_ before Generation::mutex_ before
// OpenContainers::mutex_ and InodeTable's locks; Generation::operands_mutex_
// is a leaf lock. A carrier is evaluated (its operands opened) under its own
// settle_mutex_ or Generation::mutex_; an operand's are then only tried
// (try_lock), never waited for, so that two carriers that read each other
// on two threads cannot wait for each other (a cycle on one thread is
// refused by the chain before any lock: carrier_operands.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "b2ndfs/source/byte_source.h"
#include "b2ndfs/source/tree.h"
#include "b2ndfs/store/container.h"
#include "b2ndfs/util/single_flight.h"
#include "b2ndfs/util/task_pool.h"
#include "b2ndfs/util/weighted_lru.h"
#include "b2ndfs/vfs/types.h"
#include "inode_table.h"

namespace b2ndfs::views {
class Registry;
}  // namespace b2ndfs::views

namespace b2ndfs::vfs {

// The containers kept open: least recently used beyond `max_count`, or beyond
// `max_bytes` of charged metadata, are let go (readers holding one keep it
// until they finish).
// Lock order: mutex_ is a leaf lock; containers are released after it.
class OpenContainers {
 public:
  OpenContainers(size_t max_count, int64_t max_bytes)
      : lru_({std::max<size_t>(max_count, 1),
              static_cast<size_t>(std::max<int64_t>(max_bytes, 0))}) {}
  void Touch(const std::shared_ptr<const store::Container>& container);
  void Remove(const store::Container* container);
  size_t size() const;
  int64_t bytes() const;

 private:
  // Weighs what was counted for a container when it came in: its memory
  // grows once meta.json is rendered, and the LRU takes off what it put on.
  using Lru = util::WeightedLru<const store::Container*, std::shared_ptr<const store::Container>>;
  mutable std::mutex mutex_;
  Lru lru_;  // guarded by mutex_
};

// What every generation of a mount uses.
struct GenerationServices {
  store::StoreContext* store = nullptr;
  const views::Registry* views = nullptr;
  OpenContainers* open = nullptr;
  std::shared_ptr<GenerationIndex> index;
  // Finds carriers' operands (carrier_operands.h); null: carriers are not evaluated.
  std::shared_ptr<const store::OperandOpener> operands;
};

class ContainerEntry;

// One version of one container.
class Generation {
 public:
  // Registers the generation's block of numbers in services.index.
  static std::shared_ptr<Generation> Make(const GenerationServices& services,
                                          std::weak_ptr<ContainerEntry> entry, std::string path,
                                          std::shared_ptr<const source::ByteSource> source,
                                          const struct stat& source_stat, uint64_t cache_id,
                                          Ino ino_base, uint64_t ino_count);
  ~Generation();
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  const std::string& path() const { return path_; }
  // The container path's entry, while anything keeps it.
  std::shared_ptr<ContainerEntry> entry() const { return entry_.lock(); }
  const source::Signature& signature() const { return source_->signature(); }
  // The source's owner, group, mode and times when this version was opened
  // (a change of any of them is a new signature).
  const struct stat& source_stat() const { return source_stat_; }
  uint64_t cache_id() const { return cache_id_; }
  Ino ino_base() const { return ino_base_; }
  // No longer the current version (its names answer ESTALE).
  bool dead() const { return dead_.load(); }
  void Kill() { dead_ = true; }
  // A read found the source no longer holds this version (or, for a
  // carrier, reopening it found its operands changed).
  bool found_stale() const { return source_->found_stale() || operands_stale_.load(); }
  // A carrier: the operands it was evaluated from are still there, unchanged.
  bool OperandsUnchanged(const source::Tree& tree) const;
  // The container if it is open, without reopening it.
  std::shared_ptr<const store::Container> IfOpen() const;
  // The opened container; reopened (from this generation's source, which
  // refuses another version) when the LRU had closed it.
  Result<std::shared_ptr<const store::Container>> Container();
  void Adopt(const std::shared_ptr<const store::Container>& container);
  // A token an open file keeps: while any lives, the source keeps what it
  // needs to read this version (ByteSource::HoldVersion).
  std::shared_ptr<const void> Hold();
  // This version opened as an operand of a carrier (`scope`: the operand's
  // own, with the chain that led to it), waiting for none of its locks: the
  // open container when it is no carrier, else a new Container on this
  // generation's source and cache_id (adopted when nothing is open and it
  // is no carrier). A carrier evaluated from other operand versions than
  // this generation's makes it stale (ESTALE).
  Result<std::shared_ptr<const store::Container>> OperandContainer(
      const store::OperandScope& scope);

 private:
  Generation(const GenerationServices& services, std::weak_ptr<ContainerEntry> entry,
             std::string path, std::shared_ptr<const source::ByteSource> source,
             const struct stat& source_stat, uint64_t cache_id, Ino ino_base);

  const GenerationServices services_;
  const std::weak_ptr<ContainerEntry> entry_;
  const std::string path_;
  const std::shared_ptr<const source::ByteSource> source_;
  const struct stat source_stat_;
  const uint64_t cache_id_;
  const Ino ino_base_;
  std::atomic<bool> dead_{false};
  std::atomic<bool> operands_stale_{false};
  mutable std::mutex mutex_;  // held while reopening; before OpenContainers::mutex_
  std::weak_ptr<const store::Container> container_;
  // A carrier's operand versions, from its first opening: its cached blocks
  // were computed from them. Leaf lock: a probe never waits for a reopen.
  mutable std::mutex operands_mutex_;
  std::vector<store::OperandVersion> operand_versions_;
  bool operands_known_ = false;
  // True when `container` read other operand versions than the first
  // opening (which it records when it is the first).
  bool OtherOperands(const store::Container& container);
  // The same, recording nothing.
  bool DiffersFromOperands(const store::Container& container) const;
  std::weak_ptr<const void> hold_;
};

// What container entries share: the tree, the generations' services, the
// inode table, and who to tell of a replacement.
struct EntryContext {
  const source::Tree* tree = nullptr;
  GenerationServices services;
  InodeTable* inodes = nullptr;
  // Called (no lock held) when a new generation replaced `old` (`fresh`
  // null: the container is gone), so that the kernel forgets old names.
  std::function<void(const ContainerEntry&, const Generation& old, const store::Container* fresh)>
      replaced;
  // Remote trees: probes run here, one per container at a time (null: on
  // the caller's thread), so that FUSE request threads never wait on a
  // server that does not answer for longer than they choose to: a caller
  // with an answer of its own (a generation it knows, a name's last
  // attributes) waits a grace period (WaitOrSuspect) and goes on with what
  // it has; the probe lands later and updates what it concerns. Owned by the
  // Filesystem, which stops it (running probes end, queued ones answer EIO)
  // before anything they use goes (Filesystem::StopBackground).
  TaskPool* background = nullptr;
  // Their outcome only: a finished call keeps no generation alive (the
  // caller takes the entry's current one). A probe that throws answers its
  // waiters EIO; the next caller probes again (util/single_flight.h).
  SingleFlight<std::string, Status> probes{"probe"};
  // Until then (CLOCK_MONOTONIC ns), after a probe that failed or outlived
  // its grace, callers that know a generation wait only briefly for the
  // next one: the server is down or slow.
  std::atomic<int64_t> suspect_until_ns{0};
  std::atomic<uint64_t> transient_errors{0};  // probes that failed and were forgotten
  std::atomic<uint64_t> served_known{0};      // answers that did not wait for a probe

  // Waits for `answer` the grace period a caller with an answer of its own
  // gives it (see ContainerEntry::Current); false, the server now suspect,
  // when it did not come. A call that was already in flight when the server
  // is suspect gets no wait at all: it has been waiting for the server.
  template <typename T>
  bool WaitOrSuspect(const std::shared_ptr<const Flight<T>>& answer, bool joined) {
    const bool suspect = NowNs() < suspect_until_ns.load();
    const std::chrono::milliseconds grace = !suspect ? healthy_grace
                                            : joined ? std::chrono::milliseconds(0)
                                                     : suspect_grace;
    if (answer->WaitFor(grace)) {
      return true;
    }
    MarkSuspect();
    served_known.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  void MarkSuspect() { suspect_until_ns.store(NowNs() + kSuspectNs); }
  static int64_t NowNs();
  // How long a caller that knows an answer waits for a remote source: long
  // enough for any server that answers (a change is then seen at once),
  // and, once the server failed or kept a caller waiting, short enough that
  // stat and cached reads of known names stay quick while it is down.
  std::chrono::milliseconds healthy_grace{2000};
  std::chrono::milliseconds suspect_grace{40};
  // A server that failed is suspect for this long after its last failure.
  static constexpr int64_t kSuspectNs = int64_t{30} * 1000000000;
};

// One container path: its current generation, checked against the source's
// signature whenever something inside it is used.
class ContainerEntry : public std::enable_shared_from_this<ContainerEntry> {
 public:
  // `context` outlives the entry.
  ContainerEntry(std::string path, EntryContext* context)
      : path_(std::move(path)), context_(context) {}
  const std::string& path() const { return path_; }
  // The current generation; a new one when the source changed (the old one
  // dies and the context is told). A source that cannot be reached keeps
  // the current generation (the error is forgotten); without one, or when
  // the current one is known stale, the error is returned. A remote tree is
  // asked at most once per revalidate period, on the background threads: a
  // caller that knows a generation waits for the answer only a grace period
  // (long while the server answers, short once it did not) and goes on with
  // the generation it knows.
  Result<std::shared_ptr<Generation>> Current();
  // The current generation without asking the source (nullptr when none).
  std::shared_ptr<Generation> Peek() const;
  // The generation a carrier's operand at this path is read from, on the
  // caller's thread and without waiting for this entry's locks (the caller
  // is opening a carrier: see the lock order above): the current one when
  // the source still holds it; else a new one, made current when the path
  // had none and it is no carrier, kept by the caller alone otherwise (a
  // replacement is left to the next direct use, which tells the kernel).
  // `scope` is the operand's own (store/operands.h).
  struct OperandOpen {
    std::shared_ptr<Generation> generation;
    std::shared_ptr<const store::Container> container;
  };
  Result<OperandOpen> ForOperand(const store::OperandScope& scope);

 private:
  // Probes the source and settles the current generation (a new one when the
  // version changed).
  Result<std::shared_ptr<Generation>> Settle();
  // The generation a caller may use without asking, or nullptr.
  std::shared_ptr<Generation> Usable() const;
  // Whether `probe` lets `current` go on serving (a source that cannot be
  // reached does: the error is counted and forgotten).
  bool Keeps(const Result<source::Signature>& probe,
             const std::shared_ptr<Generation>& current) const;

  const std::string path_;
  EntryContext* const context_;
  // Held while settling (probing and opening a version): one at a time.
  // Before Generation::mutex_ and current_mutex_.
  std::mutex settle_mutex_;
  mutable std::mutex current_mutex_;  // leaf lock; guards current_, confirmed_ns_
  std::shared_ptr<Generation> current_;
  int64_t confirmed_ns_ = 0;  // when a probe last found current_ unchanged
};

// The entry of a container path (Resolver::EntryFor), for what opens
// containers of the mount beside its names: carriers' operands
// (carrier_operands.h) and computed files (computed_file.h).
using EntryFinder = std::function<std::shared_ptr<ContainerEntry>(const std::string& path)>;

}  // namespace b2ndfs::vfs
