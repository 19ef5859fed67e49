#include "span_flights.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <new>

namespace b2ndfs::store {

Status SpanFlights::Fetch(int64_t part, int64_t begin, int64_t end,
                          const std::shared_ptr<uint8_t>& out, const ReadFn& read, Owned* owned,
                          Counts* counts) {
  if (end <= begin) return Status::Ok();
  Owned joined, mine;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = flights_.upper_bound({part, begin});
    if (it != flights_.begin()) {
      auto before = std::prev(it);
      if (before->first.first == part && before->second->end > begin) it = before;
    }
    int64_t cursor = begin;
    auto claim = [&](int64_t from, int64_t to) {
      auto flight = std::make_shared<Flight>();
      flight->part = part;
      flight->begin = from;
      flight->end = to;
      flights_.emplace(std::make_pair(part, from), flight);
      mine.push_back(std::move(flight));
    };
    for (; it != flights_.end() && it->first.first == part && it->second->begin < end; ++it) {
      const std::shared_ptr<Flight>& f = it->second;
      if (f->begin > cursor) claim(cursor, f->begin);
      joined.push_back(f);
      cursor = std::max(cursor, f->end);
    }
    if (cursor < end) claim(cursor, end);
  }

  Status status;
  for (const std::shared_ptr<Flight>& f : mine) {
    const int64_t n = f->end - f->begin;
    uint8_t* into = out.get() + (f->begin - begin);
    // Whatever happens, the flight lands: others wait for it.
    Status s;
    try {
      s = read(part, f->begin, n, into);
    } catch (const std::bad_alloc&) {
      s = Status(ENOMEM, "out of memory");
    } catch (const std::exception& e) {
      s = Status(EIO, e.what());
    }
    if (s.ok()) counts->read += n;
    {
      std::lock_guard<std::mutex> lock(f->mutex);
      if (s.ok()) f->bytes = std::shared_ptr<const uint8_t>(out, into);
      f->status = s;
      f->done = true;
    }
    f->landed.notify_all();
    if (s.ok()) {
      owned->push_back(f);
    } else {
      // Nobody may take bytes that never came; a later fetch tries again.
      Forget(f);
      if (status.ok()) status = s;
    }
  }
  for (const std::shared_ptr<Flight>& f : joined) {
    const int64_t from = std::max(begin, f->begin);
    const int64_t to = std::min(end, f->end);
    bool ok;
    {
      std::unique_lock<std::mutex> lock(f->mutex);
      f->landed.wait(lock, [&] { return f->done; });
      ok = f->status.ok();
    }
    if (ok) {
      std::memcpy(out.get() + (from - begin), f->bytes.get() + (from - f->begin),
                  static_cast<size_t>(to - from));
      counts->shared += to - from;
      continue;
    }
    // Its owner's read failed (perhaps only for its own reasons): try once
    // more for this fetch, unshared.
    Status s = read(part, from, to - from, out.get() + (from - begin));
    if (s.ok()) {
      counts->read += to - from;
    } else if (status.ok()) {
      status = s;
    }
  }
  return status;
}

void SpanFlights::Release(const Owned& owned) {
  for (const std::shared_ptr<Flight>& f : owned) Forget(f);
}

void SpanFlights::Forget(const std::shared_ptr<Flight>& flight) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = flights_.find({flight->part, flight->begin});
  if (it != flights_.end() && it->second == flight) flights_.erase(it);
}

}  // namespace b2ndfs::store
