// store/span_flights (private to store): single flight for a container's
// source reads, at the granularity of byte ranges.
//
// Why. Several plans may want the same compressed bytes at once: the kernel
// sends a sequential reader's requests a few at a time, and each of them, and
// each read-ahead task, plans the blocks it misses before any of them has
// landed in the block cache. The cache's single flight is per block; a plan
// reads whole coalesced spans, so two plans whose spans overlap would both
// fetch the overlap (a remote whole-array read fetched twice its object).
// Here a fetch of [begin, end) of a part takes the bytes that another fetch
// has in flight, or has landed and still holds, from that fetch, and reads
// only the pieces nobody has (one source read per uncovered piece).
// Lifetime. The pieces a fetch reads are published until its owner releases
// them (after its blocks are decoded into the cache): a plan made before
// those blocks landed then still finds their bytes here.
// Keys here are byte ranges (a fetch joins every flight that overlaps it),
// so the table is a map of ranges of its own; each piece's completion is
// util/single_flight.h's Flight, and a read that throws lands its pieces
// with the error it stands for (EIO, ENOMEM), so no fetch waits forever.
// Thread-safety: every method from any thread. mutex_ is a leaf lock (a
// Flight's own mutex is never taken under it); no source read runs while it
// is held.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "b2ndfs/util/single_flight.h"
#include "b2ndfs/util/status.h"

namespace b2ndfs::store {

class SpanFlights {
 public:
  // Bytes [begin, end) of a part, read by the fetch that owns it.
  struct Flight {
    int64_t part = 0;
    int64_t begin = 0;
    int64_t end = 0;
    // Once landed: end - begin bytes in the owner's buffer (kept alive by
    // whoever still holds the flight), or why they could not be read.
    b2ndfs::Flight<Result<std::shared_ptr<const uint8_t>>> outcome;
    bool landed() const { return outcome.done(); }
  };
  using Owned = std::vector<std::shared_ptr<Flight>>;
  using ReadFn = std::function<Status(int64_t part, int64_t offset, int64_t length, uint8_t* out)>;

  struct Counts {
    int64_t read = 0;    // bytes this fetch read from the source
    int64_t shared = 0;  // bytes it took from other fetches
  };

  // Fills `out` with bytes [begin, end) of `part`. The pieces it reads are
  // lent to other fetches straight from `out` (which their flights keep
  // alive), and added to `owned`: pass them to Release() once their bytes are
  // no longer worth sharing. A piece another fetch failed to read is read
  // again here. Claim, then Land each piece read, then Join.
  Status Fetch(int64_t part, int64_t begin, int64_t end, const std::shared_ptr<uint8_t>& out,
               const ReadFn& read, Owned* owned, Counts* counts);
  void Release(const Owned& owned);

  // Fetch in three steps, for a caller that reads the pieces of many fetches
  // together (ByteSource::ReadMany). Every piece in `mine` must be landed
  // (others wait for it), whatever happens; Join waits for the `joined`.
  struct Claim {
    int64_t part = 0;
    int64_t begin = 0;
    int64_t end = 0;
    std::shared_ptr<uint8_t> out;  // bytes [begin, end)
    Owned mine;                    // to read, at out + (flight->begin - begin)
    Owned joined;                  // in flight for other fetches
  };
  Claim Begin(int64_t part, int64_t begin, int64_t end, std::shared_ptr<uint8_t> out);
  // A piece of `claim.mine` was read (or failed): lends it, or forgets it.
  void Land(const Claim& claim, const std::shared_ptr<Flight>& flight, const Status& status,
            Owned* owned, Counts* counts);
  // Copies the joined pieces once they land (a failed one is read here);
  // returns the first failure of the claim, `landed` being its own pieces'.
  Status Join(const Claim& claim, Status landed, const ReadFn& read, Counts* counts);

 private:
  void Forget(const std::shared_ptr<Flight>& flight);

  std::mutex mutex_;
  // Disjoint ranges, by (part, begin).
  std::map<std::pair<int64_t, int64_t>, std::shared_ptr<Flight>> flights_;
};

}  // namespace b2ndfs::store
