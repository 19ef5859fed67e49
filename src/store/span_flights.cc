#include "span_flights.h"

#include <algorithm>
#include <cstring>

namespace b2ndfs::store {

SpanFlights::Claim SpanFlights::Begin(int64_t part, int64_t begin, int64_t end,
                                      std::shared_ptr<uint8_t> out) {
  Claim claim{part, begin, end, std::move(out), {}, {}};
  if (end <= begin) return claim;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = flights_.upper_bound({part, begin});
  if (it != flights_.begin()) {
    auto before = std::prev(it);
    if (before->first.first == part && before->second->end > begin) it = before;
  }
  int64_t cursor = begin;
  auto claim_piece = [&](int64_t from, int64_t to) {
    auto flight = std::make_shared<Flight>();
    flight->part = part;
    flight->begin = from;
    flight->end = to;
    flights_.emplace(std::make_pair(part, from), flight);
    claim.mine.push_back(std::move(flight));
  };
  for (; it != flights_.end() && it->first.first == part && it->second->begin < end; ++it) {
    const std::shared_ptr<Flight>& f = it->second;
    if (f->begin > cursor) claim_piece(cursor, f->begin);
    claim.joined.push_back(f);
    cursor = std::max(cursor, f->end);
  }
  if (cursor < end) claim_piece(cursor, end);
  return claim;
}

void SpanFlights::Land(const Claim& claim, const std::shared_ptr<Flight>& f, const Status& s,
                       Owned* owned, Counts* counts) {
  uint8_t* into = claim.out.get() + (f->begin - claim.begin);
  if (s.ok()) counts->read += f->end - f->begin;
  if (s.ok()) {
    f->outcome.Publish(std::shared_ptr<const uint8_t>(claim.out, into));
  } else {
    f->outcome.Publish(s);
  }
  if (s.ok()) {
    owned->push_back(f);
  } else {
    // Nobody may take bytes that never came; a later fetch tries again.
    Forget(f);
  }
}

Status SpanFlights::Join(const Claim& claim, Status status, const ReadFn& read, Counts* counts) {
  for (const std::shared_ptr<Flight>& f : claim.joined) {
    const int64_t from = std::max(claim.begin, f->begin);
    const int64_t to = std::min(claim.end, f->end);
    const Result<std::shared_ptr<const uint8_t>>& landed = f->outcome.Wait();
    uint8_t* into = claim.out.get() + (from - claim.begin);
    if (landed.ok()) {
      std::memcpy(into, landed->get() + (from - f->begin), static_cast<size_t>(to - from));
      counts->shared += to - from;
      continue;
    }
    // Its owner's read failed (perhaps only for its own reasons): try once
    // more for this fetch, unshared.
    Status s = read(claim.part, from, to - from, into);
    if (s.ok()) {
      counts->read += to - from;
    } else if (status.ok()) {
      status = s;
    }
  }
  return status;
}

Status SpanFlights::Fetch(int64_t part, int64_t begin, int64_t end,
                          const std::shared_ptr<uint8_t>& out, const ReadFn& read, Owned* owned,
                          Counts* counts) {
  if (end <= begin) return Status::Ok();
  const Claim claim = Begin(part, begin, end, out);
  Status status;
  for (const std::shared_ptr<Flight>& f : claim.mine) {
    // Whatever happens, the flight lands: others wait for it.
    auto read_piece = [&] {
      return read(part, f->begin, f->end - f->begin, out.get() + (f->begin - begin));
    };
    const Status s = RunGuarded<Status>(read_piece, "source read");
    Land(claim, f, s, owned, counts);
    if (!s.ok() && status.ok()) status = s;
  }
  return Join(claim, status, read, counts);
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
