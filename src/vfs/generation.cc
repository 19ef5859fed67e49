#include "generation.h"

#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <vector>

#include "b2ndfs/cache/cache_id.h"
#include "b2ndfs/util/log.h"
#include "b2ndfs/views/view.h"
#include "carrier_operands.h"

namespace b2ndfs::vfs {
void OpenContainers::Touch(const std::shared_ptr<const store::Container>& container) {
  Lru::Entries closing;  // released unlocked
  std::lock_guard<std::mutex> lock(mutex_);
  if (lru_.Find(container.get()) != nullptr) return;
  const int64_t charged = container->memory_bytes();
  lru_.Insert(container.get(), container, static_cast<size_t>(std::max<int64_t>(charged, 0)),
              &closing);
}

void OpenContainers::Remove(const store::Container* container) {
  Lru::Entries closing;
  std::lock_guard<std::mutex> lock(mutex_);
  lru_.Erase(container, &closing);
}

size_t OpenContainers::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lru_.size();
}

int64_t OpenContainers::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(lru_.weight());
}

Generation::Generation(const GenerationServices& services, std::weak_ptr<ContainerEntry> entry,
                       std::string path, std::shared_ptr<const source::ByteSource> source,
                       const struct stat& source_stat, uint64_t cache_id, Ino ino_base)
    : services_(services),
      entry_(std::move(entry)),
      path_(std::move(path)),
      source_(std::move(source)),
      source_stat_(source_stat),
      cache_id_(cache_id),
      ino_base_(ino_base) {}

std::shared_ptr<Generation> Generation::Make(const GenerationServices& services,
                                             std::weak_ptr<ContainerEntry> entry, std::string path,
                                             std::shared_ptr<const source::ByteSource> source,
                                             const struct stat& source_stat, uint64_t cache_id,
                                             Ino ino_base, uint64_t ino_count) {
  std::shared_ptr<Generation> generation(new Generation(services, std::move(entry), std::move(path),
                                                        std::move(source), source_stat, cache_id,
                                                        ino_base));
  services.index->Add(ino_base, ino_count, generation);
  return generation;
}

Generation::~Generation() {
  services_.index->Remove(ino_base_);
  // Nothing can reach this version's blocks any more (a generation reopened
  // unchanged keeps its cache_id only while it lives).
  if (services_.store != nullptr && services_.store->cache != nullptr) {
    services_.store->cache->EraseContainer(cache_id_);
  }
}

std::shared_ptr<const store::Container> Generation::IfOpen() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return container_.lock();
}

void Generation::Adopt(const std::shared_ptr<const store::Container>& container) {
  std::lock_guard<std::mutex> lock(mutex_);
  container_ = container;
  (void)OtherOperands(*container);
}

bool Generation::OtherOperands(const store::Container& container) {
  std::lock_guard<std::mutex> lock(operands_mutex_);
  if (!operands_known_) {
    operand_versions_ = container.operand_versions();
    operands_known_ = true;
    return false;
  }
  return container.operand_versions() != operand_versions_;
}

bool Generation::OperandsUnchanged(const source::Tree& tree) const {
  std::vector<store::OperandVersion> versions;
  {
    std::lock_guard<std::mutex> lock(operands_mutex_);
    if (operand_versions_.empty()) return true;
    versions = operand_versions_;
  }
  return vfs::OperandsUnchanged(tree, versions);
}

Result<std::shared_ptr<const store::Container>> Generation::Container() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto open = container_.lock()) {
    services_.open->Touch(open);
    return open;
  }
  const auto scope = TopScope(services_.operands.get(), path_, source_stat_);
  auto container =
      store::Container::Open(source_, services_.store, cache_id_, services_.views, scope.get());
  if (!container->ok() && container->transient()) {
    return Status(container->source().found_stale() ? ESTALE : EIO, container->error());
  }
  // A carrier reopened from operands other than those its cached blocks
  // were computed from is another version: this one is stale.
  if (OtherOperands(*container)) {
    operands_stale_ = true;
    return Status(ESTALE, path_ + ": an operand of the carrier changed");
  }
  container_ = container;
  services_.open->Touch(container);
  return container;
}

bool Generation::DiffersFromOperands(const store::Container& container) const {
  std::lock_guard<std::mutex> lock(operands_mutex_);
  return operands_known_ && container.operand_versions() != operand_versions_;
}

Result<std::shared_ptr<const store::Container>> Generation::OperandContainer(
    const store::OperandScope& scope) {
  auto is_carrier = [](const store::Container& c) {
    return c.content_tag().kind == format::ContentKind::kCarrier;
  };
  {
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (lock.owns_lock()) {
      if (auto open = container_.lock(); open && !is_carrier(*open)) {
        lock.unlock();
        services_.open->Touch(open);
        return open;
      }
    }
  }
  // Blocks are shared by cache_id: a container of its own reads the same.
  auto container =
      store::Container::Open(source_, services_.store, cache_id_, services_.views, &scope);
  if (!container->ok() && container->transient()) {
    return Status(container->source().found_stale() ? ESTALE : EIO, container->error());
  }
  if (is_carrier(*container)) {
    // Its computed blocks go under this version's cache_id: only when they
    // are computed from the operand versions this generation's were.
    if (container->content_kind() == store::ContentKind::kArray &&
        DiffersFromOperands(*container)) {
      operands_stale_ = true;
      return Status(ESTALE, path_ + ": an operand of the carrier changed");
    }
    return container;
  }
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (lock.owns_lock()) {
    if (auto open = container_.lock()) return open;
    container_ = container;
    lock.unlock();
    services_.open->Touch(container);
  }
  return container;
}

std::shared_ptr<const void> Generation::Hold() {
  // One hold of the source shared by every open file of this version.
  struct Token {
    std::shared_ptr<const void> source_hold;
  };
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto held = hold_.lock()) return held;
  auto token = std::make_shared<const Token>(Token{source_->HoldVersion()});
  hold_ = token;
  return token;
}

int64_t EntryContext::NowNs() {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1000000000LL + now.tv_nsec;
}

std::shared_ptr<Generation> ContainerEntry::Peek() const {
  std::lock_guard<std::mutex> lock(current_mutex_);
  return current_;
}

std::shared_ptr<Generation> ContainerEntry::Usable() const {
  std::lock_guard<std::mutex> lock(current_mutex_);
  return current_ && !current_->found_stale() ? current_ : nullptr;
}

Result<std::shared_ptr<Generation>> ContainerEntry::Current() {
  const source::Tree& tree = *context_->tree;
  if (!tree.costs().requests_may_stall || context_->background == nullptr) return Settle();
  std::shared_ptr<Generation> known;
  {
    // Within the tree's revalidate period a probe would answer what it
    // answered last: no need to ask.
    std::lock_guard<std::mutex> lock(current_mutex_);
    if (current_ && !current_->found_stale()) {
      known = current_;
      const double age_s = static_cast<double>(EntryContext::NowNs() - confirmed_ns_) / 1e9;
      if (age_s < tree.revalidate_seconds()) return known;
    }
  }
  auto self = shared_from_this();
  bool joined = false;
  TaskPool* pool = context_->background;
  auto answer = context_->probes.Launch(
      path_,
      [self] {
        auto settled = self->Settle();
        return settled.ok() ? Status::Ok() : settled.status();
      },
      [pool](std::function<void()> task) { return pool->Submit(std::move(task)); }, &joined);
  if (known && !context_->WaitOrSuspect(answer, joined)) return known;
  const Status outcome = answer->Wait();
  if (!outcome.ok()) return outcome;
  // What the probe settled (or a newer version, if another came since).
  auto current = Usable();
  if (current == nullptr) return Status(EIO, path_ + ": no version could be opened");
  return current;
}

bool ContainerEntry::Keeps(const Result<source::Signature>& probe,
                           const std::shared_ptr<Generation>& current) const {
  if (!current || current->found_stale()) return false;
  if (probe.ok()) {
    return *probe == current->signature() && current->OperandsUnchanged(*context_->tree);
  }
  if (source::IsGone(probe.status())) return false;
  // Trouble reaching the source says nothing about the container: the
  // caller gets the version it had (its cache still serves).
  context_->transient_errors.fetch_add(1, std::memory_order_relaxed);
  context_->MarkSuspect();
  Log(LogLevel::kDebug, path_ + ": " + probe.status().message() + " (serving the version known)");
  return true;
}

Result<ContainerEntry::OperandOpen> ContainerEntry::ForOperand(const store::OperandScope& scope) {
  const source::Tree& tree = *context_->tree;
  auto probe = tree.Probe(path_);
  std::shared_ptr<Generation> current = Peek();
  // Only tried: the thread that holds it may be opening a carrier that
  // waits for this one's operands (generation.h, lock order).
  std::unique_lock<std::mutex> settle(settle_mutex_, std::try_to_lock);
  bool keeps = Keeps(probe, current);
  if (!keeps && settle.owns_lock()) {
    current = Peek();
    probe = tree.Probe(path_);  // another thread may have moved on meanwhile
    keeps = Keeps(probe, current);
  }
  if (keeps) {
    if (settle.owns_lock()) settle.unlock();
    B2NDFS_ASSIGN_OR_RETURN(auto container, current->OperandContainer(scope));
    return OperandOpen{std::move(current), std::move(container)};
  }
  if (!probe.ok()) return probe.status();
  const bool probe_trusted = !(current && current->found_stale());
  auto source = tree.OpenContainer(path_, probe_trusted ? &*probe : nullptr);
  if (!source.ok()) return source.status();
  auto source_stat = tree.Stat(path_);
  if (!source_stat.ok()) return source_stat.status();
  const GenerationServices& services = context_->services;
  const uint64_t cache_id = cache::NewCacheId();
  auto container =
      store::Container::Open(*source, services.store, cache_id, services.views, &scope);
  if (!container->ok() && container->transient()) {
    return Status(EIO, path_ + ": " + container->error());
  }
  // A carrier's evaluation here depends on the chain that led to it, and a
  // replaced version is the next direct use's to announce: the generation
  // is then the caller's alone (one number: nothing names inside it).
  const bool shared = settle.owns_lock() && current == nullptr &&
                      container->content_tag().kind != format::ContentKind::kCarrier;
  const uint64_t count = shared ? services.views->OrdinalCount(*container) : 1;
  auto fresh = Generation::Make(services, weak_from_this(), path_, std::move(source).value(),
                                *source_stat, cache_id, context_->inodes->Reserve(count), count);
  fresh->Adopt(container);
  if (shared) {
    services.open->Touch(container);
    std::lock_guard<std::mutex> lock(current_mutex_);
    current_ = fresh;
    confirmed_ns_ = EntryContext::NowNs();
  }
  return OperandOpen{std::move(fresh), std::move(container)};
}

Result<std::shared_ptr<Generation>> ContainerEntry::Settle() {
  const source::Tree& tree = *context_->tree;
  auto probe = tree.Probe(path_);
  auto keeps = [&](const std::shared_ptr<Generation>& current) { return Keeps(probe, current); };
  auto confirm = [&](const std::shared_ptr<Generation>& current) {
    std::lock_guard<std::mutex> lock(current_mutex_);
    if (probe.ok() && current_ == current) confirmed_ns_ = EntryContext::NowNs();
    return current;
  };
  // The common case, unchanged, costs a probe and no wait for other users of
  // the container; only a change is handled under the settle lock.
  if (auto current = Peek(); keeps(current)) return confirm(current);
  std::lock_guard<std::mutex> settle(settle_mutex_);
  std::shared_ptr<Generation> current = Peek();
  probe = tree.Probe(path_);  // another thread may have moved on meanwhile
  if (keeps(current)) return confirm(current);
  std::shared_ptr<Generation> fresh;
  std::shared_ptr<const store::Container> fresh_container;
  Status gone;
  if (!probe.ok()) {
    // Gone (or, with no usable generation, unreachable: not remembered).
    if (!source::IsGone(probe.status())) return probe.status();
    gone = probe.status();
  } else {
    // A read that found the source changed may have come after the probe's
    // cached answer: then the tree asks afresh.
    const bool probe_trusted = !(current && current->found_stale());
    auto source = tree.OpenContainer(path_, probe_trusted ? &*probe : nullptr);
    Result<struct stat> source_stat = Status(EIO, "unset");
    if (source.ok()) source_stat = tree.Stat(path_);
    if (!source.ok() || !source_stat.ok()) {
      const Status& error = !source.ok() ? source.status() : source_stat.status();
      if (!source::IsGone(error)) return error;  // not remembered
      gone = error;
    } else {
      const GenerationServices& services = context_->services;
      const uint64_t cache_id = cache::NewCacheId();
      const auto scope = TopScope(services.operands.get(), path_, *source_stat);
      auto container =
          store::Container::Open(*source, services.store, cache_id, services.views, scope.get());
      if (!container->ok() && container->transient()) {
        return Status(EIO, path_ + ": " + container->error());
      }
      const uint64_t count = services.views->OrdinalCount(*container);
      fresh = Generation::Make(services, weak_from_this(), path_, std::move(source).value(),
                               *source_stat, cache_id, context_->inodes->Reserve(count), count);
      fresh->Adopt(container);
      services.open->Touch(container);
      fresh_container = std::move(container);
    }
  }
  std::shared_ptr<Generation> old;
  {
    std::lock_guard<std::mutex> lock(current_mutex_);
    old = std::exchange(current_, fresh);
    confirmed_ns_ = EntryContext::NowNs();
  }
  if (old && fresh) {
    // (The path says where: a local path, or a URL.)
    Log(LogLevel::kInfo, path_ + " changed at its source; serving its new version");
  }
  if (old) {
    old->Kill();
    if (auto closing = old->IfOpen()) context_->services.open->Remove(closing.get());
    if (context_->replaced) context_->replaced(*this, *old, fresh_container.get());
  }
  if (!fresh) return gone;
  return fresh;
}

}  // namespace b2ndfs::vfs
