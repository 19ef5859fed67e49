#include "leaf_sources.h"

#include <vector>

namespace b2ndfs::stores::internal {
namespace {

Status OutOfRange(const std::string& name, int64_t offset, size_t length, int64_t size) {
  return Status(EIO, name + ": read of " + std::to_string(length) + " bytes at " +
                         std::to_string(offset) + " past its end (" + std::to_string(size) + ")");
}

class RangeBase : public source::ByteSource {
 public:
  RangeBase(std::shared_ptr<const source::ByteSource> base, int64_t length,
            source::Signature signature, std::string name)
      : base_(std::move(base)),
        length_(length),
        signature_(std::move(signature)),
        name_(std::move(name)) {}
  const std::string& name() const override { return name_; }
  bool sparse() const override { return false; }
  const source::Signature& signature() const override { return signature_; }
  Result<int64_t> PartSize(int64_t part) const override {
    if (part != source::kFramePart) return Status(ENOENT, name_ + ": no chunk files");
    return length_;
  }
  bool found_stale() const override { return base_->found_stale(); }
  source::CostProfile cost() const override { return base_->cost(); }
  std::shared_ptr<const void> HoldVersion() const override { return base_->HoldVersion(); }

 protected:
  Status Check(int64_t part, int64_t offset, size_t length) const {
    if (part != source::kFramePart) return Status(ENOENT, name_ + ": no chunk files");
    if (offset < 0 || offset > length_ || static_cast<int64_t>(length) > length_ - offset) {
      return OutOfRange(name_, offset, length, length_);
    }
    return Status::Ok();
  }
  const std::shared_ptr<const source::ByteSource> base_;
  const int64_t length_;
  const source::Signature signature_;
  const std::string name_;
};

class SliceSource final : public RangeBase {
 public:
  SliceSource(std::shared_ptr<const source::ByteSource> base, int64_t offset, int64_t length,
              source::Signature signature, std::string name)
      : RangeBase(std::move(base), length, std::move(signature), std::move(name)),
        offset_(offset) {}
  Status Read(int64_t part, int64_t offset, size_t length, uint8_t* out) const override {
    B2NDFS_RETURN_IF_ERROR(Check(part, offset, length));
    return base_->Read(source::kFramePart, offset_ + offset, length, out);
  }
  // Kept as one batch for the base (a remote source's reads in flight together).
  void ReadMany(std::span<const source::PartRead> reads,
                const source::ReadDone& done) const override {
    std::vector<source::PartRead> moved;
    std::vector<size_t> index;
    moved.reserve(reads.size());
    for (size_t i = 0; i < reads.size(); ++i) {
      Status s = Check(reads[i].part, reads[i].offset, reads[i].length);
      if (!s.ok()) {
        done(i, s);
        continue;
      }
      source::PartRead r = reads[i];
      r.offset += offset_;
      moved.push_back(r);
      index.push_back(i);
    }
    base_->ReadMany(moved, [&](size_t k, const Status& s) { done(index[k], s); });
  }

 private:
  const int64_t offset_;
};

class EmbedLeafSource final : public RangeBase {
 public:
  EmbedLeafSource(std::shared_ptr<const source::ByteSource> base, int64_t frame_offset,
                  int64_t frame_size, std::shared_ptr<const EmbedFrame> frame, int64_t offset,
                  int64_t length, source::Signature signature, std::string name)
      : RangeBase(std::move(base), length, std::move(signature), std::move(name)),
        frame_offset_(frame_offset),
        frame_size_(frame_size),
        frame_(std::move(frame)),
        offset_(offset) {}
  Status Read(int64_t part, int64_t offset, size_t length, uint8_t* out) const override {
    B2NDFS_RETURN_IF_ERROR(Check(part, offset, length));
    return frame_
        ->ReadStream(ReaderOf(base_.get(), frame_offset_, frame_size_), offset_ + offset, length,
                     out)
        .WithContext(name_);
  }
  // Reads decompress the embed frame's chunks: no gaps worth merging.
  source::CostProfile cost() const override {
    source::CostProfile c = base_->cost();
    c.batch_reads = false;
    return c;
  }

 private:
  const int64_t frame_offset_;
  const int64_t frame_size_;
  const std::shared_ptr<const EmbedFrame> frame_;
  const int64_t offset_;
};

}  // namespace

FrameReadAt ReaderOf(const source::ByteSource* base, int64_t frame_offset, int64_t frame_size) {
  return [base, frame_offset, frame_size](int64_t offset,
                                          int64_t length) -> Result<std::vector<uint8_t>> {
    if (offset < 0 || length < 0 || offset > frame_size || length > frame_size - offset) {
      return Status(EIO, base->name() + ": read past the end of the embed frame");
    }
    std::vector<uint8_t> out(static_cast<size_t>(length));
    B2NDFS_RETURN_IF_ERROR(
        base->Read(source::kFramePart, frame_offset + offset, out.size(), out.data()));
    return out;
  };
}

std::shared_ptr<const source::ByteSource> MakeSliceSource(
    std::shared_ptr<const source::ByteSource> base, int64_t offset, int64_t length,
    source::Signature signature, std::string name) {
  return std::make_shared<SliceSource>(std::move(base), offset, length, std::move(signature),
                                       std::move(name));
}

std::shared_ptr<const source::ByteSource> MakeEmbedLeafSource(
    std::shared_ptr<const source::ByteSource> base, int64_t frame_offset, int64_t frame_size,
    std::shared_ptr<const EmbedFrame> frame, int64_t offset, int64_t length,
    source::Signature signature, std::string name) {
  return std::make_shared<EmbedLeafSource>(std::move(base), frame_offset, frame_size,
                                           std::move(frame), offset, length, std::move(signature),
                                           std::move(name));
}

}  // namespace b2ndfs::stores::internal
