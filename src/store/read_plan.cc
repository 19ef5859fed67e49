#include "b2ndfs/store/read_plan.h"

#include <algorithm>
#include <numeric>

namespace b2ndfs::store {

std::vector<CoalescedRead> CoalesceSpans(std::span<const SourceSpan> spans,
                                         const CoalesceOptions& options) {
  std::vector<size_t> order(spans.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const SourceSpan& x = spans[a];
    const SourceSpan& y = spans[b];
    if (x.part != y.part) return x.part < y.part;
    if (x.begin != y.begin) return x.begin < y.begin;
    return x.end < y.end;
  });
  std::vector<CoalescedRead> reads;
  int64_t waste = 0;  // of reads.back()
  for (size_t i : order) {
    const SourceSpan& s = spans[i];
    const int64_t end = std::max(s.begin, s.end);
    if (!reads.empty() && reads.back().part == s.part) {
      CoalescedRead& r = reads.back();
      if (s.begin < r.end) {
        // Overlapping spans (blocks that share bytes) always share a read,
        // so that reads never overlap.
        r.useful += std::max<int64_t>(0, end - r.end);
        r.end = std::max(r.end, end);
        r.members.push_back(i);
        continue;
      }
      const int64_t gap = s.begin - r.end;
      const int64_t useful = r.useful + (end - s.begin);
      if (gap <= options.max_gap && end - r.begin <= options.max_read_bytes &&
          (waste + gap) * kMaxWasteDenominator <= useful * kMaxWasteNumerator) {
        waste += gap;
        r.useful = useful;
        r.end = end;
        r.members.push_back(i);
        continue;
      }
    }
    reads.push_back(CoalescedRead{s.part, s.begin, end, end - s.begin, {i}});
    waste = 0;
  }
  return reads;
}

}  // namespace b2ndfs::store
