#include "index_budget.h"

#include "b2ndfs/format/meta_json.h"
#include "ctable.h"

namespace b2ndfs::stores::internal {

std::string SignatureText(const source::Signature& s) {
  return std::to_string(s.device) + ":" + std::to_string(s.inode) + ":" + std::to_string(s.size) +
         ":" + std::to_string(s.mtime_ns) + ":" + std::to_string(s.ctime_ns) + ":" +
         std::to_string(s.dir_inode) + ":" + std::to_string(s.dir_mtime_ns) + ":" + s.tag;
}

StoreIndexStats& GlobalStoreIndexStats() {
  static StoreIndexStats stats;
  return stats;
}

ParseCharge::~ParseCharge() {
  if (cache_ != nullptr && bytes_ > 0) cache_->Charge(-bytes_);
}

void ParseCharge::Add(int64_t bytes) {
  if (cache_ == nullptr || bytes <= 0) return;
  cache_->Charge(bytes);
  bytes_ += bytes;
}

int64_t MembersBytes(const ZipDirectory& zip) {
  int64_t bytes = static_cast<int64_t>(zip.members.capacity() * sizeof(ZipMember));
  for (const auto& m : zip.members) {
    bytes += static_cast<int64_t>(m.name.capacity() + m.problem.capacity());
  }
  return bytes;
}

int64_t EstimatedBytes(const ZipDirectory& zip) {
  int64_t bytes = 0;
  for (const auto& m : zip.members) {
    bytes += static_cast<int64_t>(sizeof(ZipMember) + sizeof(Node) + 32 + m.name.capacity() +
                                  3 * m.name.size());
  }
  return bytes;
}

int64_t IndexMemoryBytes(const StoreIndex& index) {
  int64_t bytes = sizeof(StoreIndex) + (index.embed ? index.embed->memory_bytes() : 0);
  for (const auto& [p, node] : index.nodes) {
    bytes += static_cast<int64_t>(p.capacity() * 2 + sizeof(Node) + node.meta_json.capacity() +
                                  node.problem.capacity() + node.columns_json.capacity());
    if (node.valid_file) {
      bytes += static_cast<int64_t>(sizeof(ValidFileSpec) + node.valid_file->header.capacity() +
                                    node.valid_file->live_before->size() * 8 +
                                    node.valid_file->column.capacity() * 2);
    }
    for (const auto& c : node.children) bytes += static_cast<int64_t>(c.capacity() + 32);
  }
  for (const auto& m : index.zip.members) {
    bytes += static_cast<int64_t>(sizeof(m) + m.name.capacity() + m.problem.capacity());
  }
  return bytes;
}

std::shared_ptr<const StoreIndex> OversizeVerdict(std::shared_ptr<StoreIndex> index, int64_t bytes,
                                                  bool estimated) {
  GlobalStoreIndexStats().oversize.fetch_add(1, std::memory_order_relaxed);
  StoreIndex verdict;
  verdict.kind = index->kind;
  verdict.signature = index->signature;
  Node& root = verdict.nodes[""];
  root.problem = std::string("its index ") + (estimated ? "would take at least " : "takes ") +
                 std::to_string(bytes) + " bytes of memory, more than the " +
                 std::to_string(kMaxIndexBytes) +
                 " b2ndfs keeps for one store: its leaves are not shown";
  // As a broken store's (store_index.cc, Builder::Finish).
  root.meta_json = format::RenderErrorJson(root.problem) + "\n";
  verdict.memory_bytes = 4096;
  *index = std::move(verdict);
  return index;
}

}  // namespace b2ndfs::stores::internal
