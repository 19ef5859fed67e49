// util/weighted_lru: recency order, limits by count and weight, what leaves
// the LRU handed back, a custom index with a hint, and a brute-force model.
#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "b2ndfs/util/weighted_lru.h"

using b2ndfs::util::HashIndex;
using b2ndfs::util::WeightedLru;

namespace {

using Lru = WeightedLru<std::string, int>;

std::vector<std::string> Keys(const Lru& lru) {
  std::vector<std::string> keys;
  for (const auto& e : lru) keys.push_back(e.key);
  return keys;
}

std::vector<std::string> Keys(const Lru::Entries& entries) {
  std::vector<std::string> keys;
  for (const auto& e : entries) keys.push_back(e.key);
  return keys;
}

using Strings = std::vector<std::string>;

}  // namespace

TEST_CASE("WeightedLru keeps recency order; Find touches, Peek does not") {
  Lru lru;
  Lru::Entries out;
  CHECK(lru.empty());
  CHECK(lru.Find("a") == nullptr);
  CHECK(lru.Insert("a", 1, 1, &out) == 0);
  CHECK(lru.Insert("b", 2, 1, &out) == 0);
  CHECK(lru.Insert("c", 3, 1, &out) == 0);
  CHECK(Keys(lru) == Strings{"c", "b", "a"});
  REQUIRE(lru.Peek("a") != nullptr);
  CHECK(*lru.Peek("a") == 1);
  CHECK(Keys(lru) == Strings{"c", "b", "a"});
  REQUIRE(lru.Find("a") != nullptr);
  CHECK(*lru.Find("a") == 1);
  CHECK(Keys(lru) == Strings{"a", "c", "b"});
  *lru.Find("b") = 20;  // values are mutable in place
  CHECK(*lru.Peek("b") == 20);
  CHECK(lru.Contains("c"));
  CHECK_FALSE(lru.Contains("z"));
  CHECK(out.empty());
  CHECK(lru.size() == 3);
  CHECK(lru.weight() == 3);
}

TEST_CASE("WeightedLru evicts the least recent beyond max_count") {
  Lru lru({2, Lru::kUnbounded});
  Lru::Entries out;
  lru.Insert("a", 1, 1, &out);
  lru.Insert("b", 2, 1, &out);
  lru.Find("a");
  CHECK(lru.Insert("c", 3, 1, &out) == 1);
  CHECK(Keys(out) == Strings{"b"});
  CHECK(out.front().value == 2);
  CHECK(Keys(lru) == Strings{"c", "a"});
}

TEST_CASE("WeightedLru evicts by total weight, never the entry it inserts") {
  Lru lru({Lru::kUnbounded, 10});
  Lru::Entries out;
  lru.Insert("a", 1, 4, &out);
  lru.Insert("b", 2, 4, &out);
  CHECK(lru.weight() == 8);
  CHECK(lru.Insert("c", 3, 5, &out) == 1);  // 13 > 10: a goes
  CHECK(Keys(out) == Strings{"a"});
  CHECK(lru.weight() == 9);
  // Heavier than the whole budget: everything else goes, it stays.
  out.clear();
  CHECK(lru.Insert("huge", 4, 50, &out) == 2);
  CHECK(Keys(out) == Strings{"b", "c"});
  CHECK(Keys(lru) == Strings{"huge"});
  CHECK(lru.weight() == 50);
  // Trim enforces the limits on every entry, the newest too.
  out.clear();
  CHECK(lru.Trim(&out) == 1);
  CHECK(lru.empty());
  CHECK(lru.weight() == 0);
}

TEST_CASE("WeightedLru with both limits stops at the first that holds both") {
  Lru lru({3, 10});
  Lru::Entries out;
  for (int i = 0; i < 3; ++i) lru.Insert(std::to_string(i), i, 2, &out);
  CHECK(out.empty());
  CHECK(lru.Insert("3", 3, 2, &out) == 1);  // count
  CHECK(Keys(out) == Strings{"0"});
  out.clear();
  CHECK(lru.Insert("4", 4, 7, &out) == 2);  // weight: 2+2+2+7 = 13, then 11
  CHECK(Keys(out) == Strings{"1", "2"});
  CHECK(Keys(lru) == Strings{"4", "3"});
  CHECK(lru.weight() == 9);
}

TEST_CASE("WeightedLru replaces an entry of the same key and hands the old value back") {
  Lru lru({Lru::kUnbounded, 10});
  Lru::Entries out;
  lru.Insert("a", 1, 3, &out);
  lru.Insert("b", 2, 3, &out);
  CHECK(lru.Insert("a", 10, 6, &out) == 0);
  CHECK(lru.size() == 2);
  CHECK(lru.weight() == 9);
  CHECK(Keys(lru) == Strings{"a", "b"});
  CHECK(*lru.Peek("a") == 10);
  REQUIRE(out.size() == 1);  // replaced, not evicted
  CHECK(out.front().key == "a");
  CHECK(out.front().value == 1);
  CHECK(out.front().weight == 3);
  out.clear();
  CHECK(lru.Insert("a", 11, 9, &out) == 1);  // 12 > 10: b evicted
  CHECK(Keys(out) == Strings{"a", "b"});
  CHECK(lru.weight() == 9);
}

TEST_CASE("WeightedLru erases, erases by predicate, pops and clears into the caller's list") {
  Lru lru;
  Lru::Entries out;
  for (int i = 0; i < 6; ++i) lru.Insert(std::to_string(i), i, static_cast<size_t>(i), &out);
  CHECK(lru.weight() == 15);
  CHECK(lru.Erase("3", &out));
  CHECK_FALSE(lru.Erase("3", &out));
  CHECK(Keys(out) == Strings{"3"});
  CHECK(lru.weight() == 12);
  out.clear();
  CHECK(lru.EraseIf([](const Lru::Entry& e) { return e.value % 2 == 0; }, &out) == 3);
  CHECK(Keys(out) == Strings{"4", "2", "0"});
  CHECK(Keys(lru) == Strings{"5", "1"});
  CHECK(lru.weight() == 6);
  CHECK_FALSE(lru.Contains("4"));
  out.clear();
  CHECK(lru.PopOldest(&out));
  CHECK(Keys(out) == Strings{"1"});
  lru.Insert("7", 7, 1, &out);
  out.clear();
  lru.Clear(&out);
  CHECK(Keys(out) == Strings{"7", "5"});
  CHECK(lru.empty());
  CHECK(lru.weight() == 0);
  CHECK_FALSE(lru.PopOldest(&out));
  CHECK(lru.Find("5") == nullptr);
  // Still usable after a clear.
  lru.Insert("5", 5, 1, &out);
  CHECK(*lru.Peek("5") == 5);
}

TEST_CASE("WeightedLru hands values back alive, or destroys them with a null list") {
  WeightedLru<int, std::shared_ptr<int>> lru({1, WeightedLru<int, int>::kUnbounded});
  auto first = std::make_shared<int>(1);
  std::weak_ptr<int> watch = first;
  decltype(lru)::Entries out;
  lru.Insert(1, std::move(first), 1, &out);
  lru.Insert(2, std::make_shared<int>(2), 1, &out);
  CHECK_FALSE(watch.expired());  // the caller holds it in `out`
  out.clear();
  CHECK(watch.expired());
  auto third = std::make_shared<int>(3);
  watch = third;
  lru.Insert(3, std::move(third), 1, nullptr);
  lru.Insert(4, std::make_shared<int>(4), 1, nullptr);
  CHECK(watch.expired());
  CHECK(lru.size() == 1);
}

TEST_CASE("WeightedLru's limits can change; Trim applies them") {
  Lru lru;
  Lru::Entries out;
  for (int i = 0; i < 5; ++i) lru.Insert(std::to_string(i), i, 1, &out);
  lru.set_limits({2, Lru::kUnbounded});
  CHECK(lru.size() == 5);  // nothing happens until asked
  CHECK(lru.Trim(&out) == 3);
  CHECK(Keys(lru) == Strings{"4", "3"});
  CHECK(lru.limits().max_count == 2);
}

namespace {

// A throwing hash: Insert must leave the LRU as it was.
struct Fussy {
  int v;
  bool operator==(const Fussy&) const = default;
};
struct FussyHash {
  size_t operator()(const Fussy& f) const {
    if (f.v < 0) throw std::runtime_error("no hash");
    return static_cast<size_t>(f.v);
  }
};

// An index with a hint, as the block cache's: the hint is the key's hash,
// and each call checks it was handed the right one.
struct HintedIndex {
  template <typename Handle>
  class For {
   public:
    using Hint = uint64_t;
    static Hint HintOf(int key) { return static_cast<uint64_t>(key) * 7919u; }
    const Handle* Find(int key, Hint hint) const {
      CHECK(hint == HintOf(key));
      auto it = map_.find(key);
      return it == map_.end() ? nullptr : &it->second;
    }
    void Insert(int key, Hint hint, Handle handle) {
      CHECK(hint == HintOf(key));
      map_.emplace(key, handle);
    }
    void Erase(int key, Hint hint) {
      CHECK(hint == HintOf(key));
      map_.erase(key);
    }
    void Clear() { map_.clear(); }
    size_t size() const { return map_.size(); }

   private:
    std::unordered_map<int, Handle> map_;
  };
};

}  // namespace

TEST_CASE("WeightedLru is unchanged when inserting throws") {
  WeightedLru<Fussy, int, HashIndex<Fussy, FussyHash>> lru;
  decltype(lru)::Entries out;
  lru.Insert(Fussy{1}, 1, 1, &out);
  CHECK_THROWS(lru.Insert(Fussy{-1}, 2, 5, &out));
  CHECK(lru.size() == 1);
  CHECK(lru.weight() == 1);
  CHECK(lru.begin()->key.v == 1);
}

TEST_CASE("WeightedLru passes an index's hint along and exposes the index") {
  using Hinted = WeightedLru<int, int, HintedIndex>;
  Hinted lru({3, Hinted::kUnbounded});
  Hinted::Entries out;
  for (int i = 0; i < 5; ++i) lru.Insert(i, HintedIndex::For<int>::HintOf(i), i, 1, &out);
  CHECK(out.size() == 2);
  CHECK(lru.index().size() == 3);
  REQUIRE(lru.Find(4, HintedIndex::For<int>::HintOf(4)) != nullptr);
  CHECK(lru.Erase(3, &out));
  CHECK(lru.EraseIf([](const Hinted::Entry& e) { return e.key == 2; }, &out) == 1);
  CHECK(lru.index().size() == 1);
}

TEST_CASE("WeightedLru matches a brute-force model over random operations") {
  std::mt19937 rng(12345);
  for (int round = 0; round < 20; ++round) {
    const size_t max_count = 1 + rng() % 8;
    const size_t max_weight = 1 + rng() % 40;
    WeightedLru<int, int> lru({max_count, max_weight});
    WeightedLru<int, int>::Entries out;
    struct Item {
      int key, value;
      size_t weight;
    };
    std::vector<Item> model;  // most recent first
    auto find = [&](int key) {
      for (size_t i = 0; i < model.size(); ++i) {
        if (model[i].key == key) return static_cast<int>(i);
      }
      return -1;
    };
    auto total = [&] {
      size_t w = 0;
      for (const Item& it : model) w += it.weight;
      return w;
    };
    for (int step = 0; step < 400; ++step) {
      const int key = static_cast<int>(rng() % 12);
      const int op = static_cast<int>(rng() % 4);
      out.clear();
      if (op == 0) {  // insert
        const size_t weight = rng() % 12;
        const int value = static_cast<int>(rng() % 1000);
        const int at = find(key);
        if (at >= 0) model.erase(model.begin() + at);
        model.insert(model.begin(), Item{key, value, weight});
        size_t evicted = 0;
        while (model.size() > 1 && (model.size() > max_count || total() > max_weight)) {
          model.pop_back();
          ++evicted;
        }
        CHECK(lru.Insert(key, value, weight, &out) == evicted);
        CHECK(out.size() == evicted + (at >= 0 ? 1 : 0));
      } else if (op == 1) {  // find
        const int at = find(key);
        int* got = lru.Find(key);
        REQUIRE((got != nullptr) == (at >= 0));
        if (at >= 0) {
          CHECK(*got == model[static_cast<size_t>(at)].value);
          Item item = model[static_cast<size_t>(at)];
          model.erase(model.begin() + at);
          model.insert(model.begin(), item);
        }
      } else if (op == 2) {  // erase
        const int at = find(key);
        CHECK(lru.Erase(key, &out) == (at >= 0));
        if (at >= 0) model.erase(model.begin() + at);
      } else {  // trim
        size_t evicted = 0;
        while (!model.empty() && (model.size() > max_count || total() > max_weight)) {
          model.pop_back();
          ++evicted;
        }
        CHECK(lru.Trim(&out) == evicted);
      }
      REQUIRE(lru.size() == model.size());
      CHECK(lru.weight() == total());
      size_t i = 0;
      for (const auto& e : lru) {
        CHECK(e.key == model[i].key);
        CHECK(e.value == model[i].value);
        ++i;
      }
    }
  }
}
