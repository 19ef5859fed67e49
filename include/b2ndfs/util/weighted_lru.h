// util/weighted_lru: the project's only least-recently-used list. Every cache
// that evicts by recency uses it: the block cache's shards, the descriptor
// cache, the remote metadata cache, the disk cache's index, the open
// containers of a mount, the resolver's recent entries and LogOnce's keys.
//
// WeightedLru<Key, Value, IndexPolicy> keeps entries (key, value, weight) in
// recency order, most recent first, with an index from key to entry: O(1)
// lookup with touch, insertion and erasure. Limits bound the number of
// entries and/or their total weight; Insert() evicts the least recent
// entries until both hold again (never the entry it inserted: a caller that
// must not keep an entry heavier than the whole budget checks that first),
// Trim() evicts until they hold, however few entries that leaves.
// Ownership: the LRU owns its entries. What leaves it (evicted, erased,
// replaced or cleared) is handed back in an `Entries` list the caller
// passes, so that the caller destroys the values (closes a descriptor,
// frees a buffer) after releasing its lock; a null list destroys them in
// place.
// Index: IndexPolicy::For<Handle> maps a key to its entry's handle.
// HashIndex (the default) is a std::unordered_map; a cache with a faster
// index of its own (cache/key_index.h) supplies a policy with a Hint: a
// value computed from the key once (a hash) and passed to every call about
// that key, so a caller that also shards by it hashes once.
// Errors: Insert() may throw std::bad_alloc (or what the key's hash or copy
// throws); the LRU is then unchanged. Nothing else allocates, except the
// default index's erase, which does not.
// Thread-safety: none; the owner guards it (every user holds its own mutex).
#pragma once

#include <cstddef>
#include <functional>
#include <iterator>
#include <limits>
#include <list>
#include <unordered_map>
#include <utility>

namespace b2ndfs::util {

// The hint of an index that needs none.
struct NoHint {};

// The default index: a std::unordered_map from a copy of the key.
template <typename Key, typename Hash = std::hash<Key>, typename Eq = std::equal_to<Key>>
struct HashIndex {
  template <typename Handle>
  class For {
   public:
    using Hint = NoHint;
    static Hint HintOf(const Key&) { return {}; }
    const Handle* Find(const Key& key, Hint) const {
      auto it = map_.find(key);
      return it == map_.end() ? nullptr : &it->second;
    }
    void Insert(const Key& key, Hint, Handle handle) { map_.emplace(key, std::move(handle)); }
    void Erase(const Key& key, Hint) { map_.erase(key); }
    void Clear() { map_.clear(); }

   private:
    std::unordered_map<Key, Handle, Hash, Eq> map_;
  };
};

template <typename Key, typename Value, typename IndexPolicy = HashIndex<Key>>
class WeightedLru {
 public:
  struct Entry {
    Key key;
    Value value;
    size_t weight = 0;
  };
  // Entries in recency order; also what the LRU hands back.
  using Entries = std::list<Entry>;
  using Handle = typename Entries::iterator;
  using Index = typename IndexPolicy::template For<Handle>;
  using Hint = typename Index::Hint;
  using const_iterator = typename Entries::const_iterator;

  static constexpr size_t kUnbounded = std::numeric_limits<size_t>::max();
  struct Limits {
    size_t max_count = kUnbounded;
    size_t max_weight = kUnbounded;
  };

  WeightedLru() = default;
  explicit WeightedLru(Limits limits) : limits_(limits) {}
  WeightedLru(const WeightedLru&) = delete;
  WeightedLru& operator=(const WeightedLru&) = delete;

  // New limits; entries over them stay until the next Insert() or Trim().
  void set_limits(Limits limits) { limits_ = limits; }
  const Limits& limits() const { return limits_; }

  // The value of `key`, made most recent; nullptr when absent.
  Value* Find(const Key& key) { return Find(key, index_.HintOf(key)); }
  Value* Find(const Key& key, Hint hint) {
    const Handle* handle = index_.Find(key, hint);
    if (handle == nullptr) return nullptr;
    entries_.splice(entries_.begin(), entries_, *handle);
    return &(*handle)->value;
  }
  // The value of `key` without touching it; nullptr when absent.
  Value* Peek(const Key& key) { return Peek(key, index_.HintOf(key)); }
  Value* Peek(const Key& key, Hint hint) {
    const Handle* handle = index_.Find(key, hint);
    return handle == nullptr ? nullptr : &(*handle)->value;
  }
  const Value* Peek(const Key& key) const { return Peek(key, index_.HintOf(key)); }
  const Value* Peek(const Key& key, Hint hint) const {
    const Handle* handle = index_.Find(key, hint);
    return handle == nullptr ? nullptr : &(*handle)->value;
  }
  bool Contains(const Key& key) const { return Peek(key) != nullptr; }
  bool Contains(const Key& key, Hint hint) const { return Peek(key, hint) != nullptr; }

  // Makes (key, value, weight) the most recent entry; an older entry of the
  // key goes to `out`. Then evicts least recent entries (into `out`, never
  // this one) until the limits hold. Returns how many were evicted.
  size_t Insert(const Key& key, Value value, size_t weight, Entries* out) {
    return Insert(key, index_.HintOf(key), std::move(value), weight, out);
  }
  size_t Insert(const Key& key, Hint hint, Value value, size_t weight, Entries* out) {
    Entries fresh;
    fresh.push_back(Entry{key, std::move(value), weight});  // may throw: nothing changed
    if (const Handle* old = index_.Find(key, hint)) {
      // The old node stays where the index points; it takes the new value
      // and the fresh node carries the old one out.
      Handle node = *old;
      std::swap(node->value, fresh.front().value);
      std::swap(node->weight, fresh.front().weight);
      weight_ = weight_ - fresh.front().weight + node->weight;
      entries_.splice(entries_.begin(), entries_, node);
      Release(&fresh, out);
    } else {
      entries_.splice(entries_.begin(), fresh);
      try {
        index_.Insert(key, hint, entries_.begin());
      } catch (...) {
        entries_.pop_front();
        throw;
      }
      weight_ += weight;
    }
    size_t evicted = 0;
    while (entries_.size() > 1 && OverLimits()) {
      DropOldest(out);
      ++evicted;
    }
    return evicted;
  }

  // Evicts least recent entries into `out` until the limits hold (all of
  // them if need be). Returns how many were evicted.
  size_t Trim(Entries* out) {
    size_t evicted = 0;
    while (!entries_.empty() && OverLimits()) {
      DropOldest(out);
      ++evicted;
    }
    return evicted;
  }

  // Moves the least recent entry into `out`; false when empty.
  bool PopOldest(Entries* out) {
    if (entries_.empty()) return false;
    DropOldest(out);
    return true;
  }

  // Moves the entry of `key` into `out`; false when absent.
  bool Erase(const Key& key, Entries* out) { return Erase(key, index_.HintOf(key), out); }
  bool Erase(const Key& key, Hint hint, Entries* out) {
    const Handle* handle = index_.Find(key, hint);
    if (handle == nullptr) return false;
    Drop(*handle, hint, out);
    return true;
  }

  // Moves every entry for which pred(entry) holds into `out`; returns how
  // many.
  template <typename Pred>
  size_t EraseIf(Pred pred, Entries* out) {
    size_t n = 0;
    for (auto it = entries_.begin(); it != entries_.end();) {
      auto next = std::next(it);
      if (pred(static_cast<const Entry&>(*it))) {
        Drop(it, index_.HintOf(it->key), out);
        ++n;
      }
      it = next;
    }
    return n;
  }

  // Moves every entry into `out`.
  void Clear(Entries* out) {
    index_.Clear();
    weight_ = 0;
    Entries all;
    all.splice(all.end(), entries_);
    Release(&all, out);
  }

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  size_t weight() const { return weight_; }
  // Most recent first.
  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  // For what an index offers beyond lookups (a prefetch).
  const Index& index() const { return index_; }

 private:
  bool OverLimits() const {
    return entries_.size() > limits_.max_count || weight_ > limits_.max_weight;
  }
  void DropOldest(Entries* out) {
    const Handle last = std::prev(entries_.end());
    Drop(last, index_.HintOf(last->key), out);
  }
  void Drop(Handle it, Hint hint, Entries* out) {
    weight_ -= it->weight;
    index_.Erase(it->key, hint);
    Entries one;
    one.splice(one.end(), entries_, it);
    Release(&one, out);
  }
  // Hands `gone` to `out` (a splice: no allocation), or destroys it here.
  static void Release(Entries* gone, Entries* out) {
    if (out != nullptr) out->splice(out->end(), *gone);
  }

  Limits limits_;
  Entries entries_;  // most recent first
  Index index_;
  size_t weight_ = 0;  // sum of the entries' weights
};

}  // namespace b2ndfs::util
