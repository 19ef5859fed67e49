// Building a store's index from python-blosc2's layouts:
// - .b2z: a zip archive written with ZIP_STORED (dict_store.py,
//   DictStore.to_b2z): leaf frames named KEY + ".b2nd" (NDArray), ".b2f"
//   (SChunk) or ".b2b" (BatchArray), then "embed.b2e" last; a reader opens
//   each member at its data offset (DictStore._get_zip_offsets: local header
//   offset + 30 + name length + extra length), no extraction.
// - .b2d: the same files in a directory (DictStore._update_map_tree).
// - .b2e: one EmbedStore frame (embed_store.py).
// Keys of external leaves win over embedded ones (DictStore.__getitem__
// looks in map_tree first). "/__vlmeta__" and "GROUP/__vlmeta__" hold a
// TreeStore's (or a group's) attributes as the vlmeta of an SChunk
// (tree_store.py, TreeStore.vlmeta): they become the group's meta.json.
#include "store_index.h"

#include <algorithm>

#include "b2ndfs/format/meta_json.h"
#include "b2ndfs/util/json.h"
#include "ctable.h"
#include "index_budget.h"
#include "leaf_sources.h"

namespace b2ndfs::stores::internal {
namespace {

constexpr const char* kLeafExtensions[] = {".b2nd", ".b2f", ".b2b"};
constexpr const char* kVlmetaName = "__vlmeta__";

// A source whose reads are watched: a failed read is the source's trouble
// (returned to the caller), not the content's (shown in meta.json).
struct Watched {
  std::shared_ptr<const source::ByteSource> source;
  mutable Status read_error;
  FrameReadAt Reader(int64_t offset, int64_t size) const {
    FrameReadAt inner = ReaderOf(source.get(), offset, size);
    return [this, inner](int64_t at, int64_t length) -> Result<std::vector<uint8_t>> {
      auto r = inner(at, length);
      // Reads inside the bounds that fail are the source's trouble.
      if (!r.ok() && at >= 0 && length >= 0 && read_error.ok()) {
        if (r.status().message().find("past the end") == std::string::npos) {
          read_error = r.status();
        }
      }
      return r;
    };
  }
};

// Splits "/a/b" (a key) into a relative path "a/b", each name shown as
// ShownName() says; empty when the key cannot be one (no leading "/", empty,
// "." or ".." components, NUL).
std::string KeyPath(const std::string& key) {
  if (key.size() < 2 || key.front() != '/') return "";
  const std::string rel = key.substr(1);
  std::string shown;
  size_t start = 0;
  while (start <= rel.size()) {
    size_t end = rel.find('/', start);
    if (end == std::string::npos) end = rel.size();
    const std::string part = rel.substr(start, end - start);
    if (part.empty() || part == "." || part == ".." || part.find('\0') != std::string::npos) {
      return "";
    }
    shown += (shown.empty() ? "" : "/") + ShownName(part);
    start = end + 1;
  }
  return shown;
}

std::string Parent(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}
std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

class Builder {
 public:
  explicit Builder(StoreIndex* index) : index_(index) { index_->nodes[""]; }

  // Adds a leaf (or a problem in its place) at `path`, with the directories
  // above it. Returns false when the path is taken.
  bool Add(const std::string& key, const std::string& path, Node node) {
    if (path.empty()) {
      problems_.emplace_back(key, "not a key b2ndfs can show as a path");
      return false;
    }
    if (index_->nodes.count(path) != 0) return false;
    // Directories above; a leaf in the way refuses.
    std::string dir = Parent(path);
    std::vector<std::string> made;
    while (true) {
      auto it = index_->nodes.find(dir);
      if (it != index_->nodes.end()) {
        if (!it->second.directory || !it->second.problem.empty()) {
          problems_.emplace_back(key, "below another leaf");
          for (const auto& m : made) index_->nodes.erase(m);
          return false;
        }
        break;
      }
      index_->nodes[dir];
      made.push_back(dir);
      dir = Parent(dir);
    }
    index_->nodes[path] = std::move(node);
    return true;
  }

  void Problem(const std::string& key, const std::string& why) { problems_.emplace_back(key, why); }

  // Children lists, and the root's meta.json.
  void Finish(const std::string& kind, const std::string& tag, const std::string& embed_vlmeta) {
    for (auto& [path, node] : index_->nodes) {
      if (path.empty()) continue;
      index_->nodes[Parent(path)].children.push_back(BaseName(path));
    }
    for (auto& [path, node] : index_->nodes) {
      std::sort(node.children.begin(), node.children.end());
      if (!node.problem.empty()) node.meta_json = format::RenderErrorJson(node.problem) + "\n";
    }
    Node& root = index_->nodes[""];
    if (!root.problem.empty()) return;  // the store itself is broken: its meta.json says why
    std::string json = "{\n  \"store\": " + json::Quote(kind);
    const std::string type = tag == "b2tree"   ? "TreeStore"
                             : tag == "b2dict" ? "DictStore"
                                               : "EmbedStore";
    json += ",\n  \"type\": " + json::Quote(type);
    int64_t leaves = 0;
    for (const auto& [path, node] : index_->nodes) leaves += node.leaf.has_value();
    json += ",\n  \"leaves\": " + std::to_string(leaves);
    if (!root.meta_json.empty()) json += ",\n  \"vlmeta\": " + root.meta_json;
    if (!embed_vlmeta.empty() && embed_vlmeta != "{}") {
      json += ",\n  \"embed_vlmeta\": " + embed_vlmeta;
    }
    if (!references_.empty()) {
      json += ",\n  \"references\": {";
      for (size_t i = 0; i < references_.size(); ++i) {
        json += (i ? ", " : "") + json::Quote(references_[i].first) + ": " + references_[i].second;
      }
      json += "}";
    }
    if (!problems_.empty()) {
      json += ",\n  \"problems\": {";
      for (size_t i = 0; i < problems_.size(); ++i) {
        json += (i ? ", " : "") + json::Quote(problems_[i].first) + ": " +
                json::Quote(problems_[i].second);
      }
      json += "}";
    }
    root.meta_json = json + "\n}\n";
    // Group attributes.
    for (auto& [path, json_text] : group_vlmeta_) {
      auto it = index_->nodes.find(path);
      if (it != index_->nodes.end() && it->second.directory && it->second.problem.empty() &&
          !path.empty()) {
        it->second.meta_json = "{\n  \"vlmeta\": " + json_text + "\n}\n";
      }
    }
  }

  void Reference(const std::string& key, const std::string& json) {
    references_.emplace_back(key, json);
  }
  void GroupVlmeta(const std::string& group, std::string json) {
    if (group.empty()) {
      index_->nodes[""].meta_json = std::move(json);
    } else {
      group_vlmeta_.emplace_back(group, std::move(json));
    }
  }

 private:
  StoreIndex* index_;
  std::vector<std::pair<std::string, std::string>> problems_;
  std::vector<std::pair<std::string, std::string>> references_;
  std::vector<std::pair<std::string, std::string>> group_vlmeta_;
};

// The key of an external leaf file or member ("a/b.b2nd" -> "/a/b"), or
// empty when the name has no leaf extension.
std::string ExternalKey(const std::string& name) {
  for (const char* ext : kLeafExtensions) {
    const std::string e = ext;
    if (name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0) {
      return "/" + name.substr(0, name.size() - e.size());
    }
  }
  return "";
}

Node BrokenNode(const std::string& why) {
  Node n;
  n.problem = why;
  return n;
}

// Adds the embedded leaves of `frame` whose keys are not taken yet, and the
// attribute leaves' JSON (read through `stream`).
void AddEmbedded(Builder* builder, const EmbedFrame& frame, const FrameReadAt& frame_read) {
  for (const auto& e : frame.map().entries) {
    const std::string path = KeyPath(e.key);
    if (e.reference) {
      builder->Reference(e.key, "{\"urlbase\": " + json::Quote(e.urlbase) +
                                    ", \"path\": " + json::Quote(e.path) + "}");
      continue;
    }
    if (!e.problem.empty()) {
      builder->Add(e.key, path, BrokenNode("embed_map entry " + e.key + ": " + e.problem));
      continue;
    }
    if (e.offset > frame.stream_size() || e.length > frame.stream_size() - e.offset) {
      builder->Add(e.key, path,
                   BrokenNode("embed_map says bytes " + std::to_string(e.offset) + "+" +
                              std::to_string(e.length) + ", outside the embed store's stream of " +
                              std::to_string(frame.stream_size()) + " bytes"));
      continue;
    }
    if (BaseName(path) == kVlmetaName) {
      // Read out of the stream: a small SChunk frame.
      FrameReadAt leaf_read = [&frame, &frame_read, &e](
                                  int64_t at, int64_t length) -> Result<std::vector<uint8_t>> {
        if (at < 0 || length < 0 || at > e.length || length > e.length - at) {
          return Status(EIO, "read past the end of the attributes frame");
        }
        std::vector<uint8_t> out(static_cast<size_t>(length));
        B2NDFS_RETURN_IF_ERROR(frame.ReadStream(frame_read, e.offset + at, out.size(), out.data()));
        return out;
      };
      auto json = FrameVlmetaJson(leaf_read, e.length, {});
      builder->GroupVlmeta(Parent(path),
                           json.ok() ? *json : format::RenderErrorJson(json.status().message()));
      continue;
    }
    Node n;
    n.directory = false;
    n.leaf = Leaf{Leaf::Where::kEmbed, 0, "", e.offset, e.length};
    builder->Add(e.key, path, std::move(n));
  }
}

// columns.json for every directory that is a CTable's root (ctable.h).
Status AddTables(const source::Tree& base, const std::string& store, const Watched* src,
                 StoreIndex* index) {
  std::vector<std::unique_ptr<Watched>> files;
  Status failed;
  LeafFrames frames = [&](const std::string& path) -> std::optional<FrameRef> {
    auto it = index->nodes.find(path);
    if (it == index->nodes.end() || !it->second.leaf) return std::nullopt;
    const Leaf& leaf = *it->second.leaf;
    switch (leaf.where) {
      case Leaf::Where::kMember:
        return FrameRef{src->Reader(leaf.offset, leaf.length), leaf.length};
      case Leaf::Where::kEmbed: {
        const EmbedFrame* frame = index->embed.get();
        FrameReadAt stream = src->Reader(index->embed_offset, index->embed_size);
        const int64_t offset = leaf.offset;
        const int64_t length = leaf.length;
        FrameReadAt read = [frame, stream, offset, length](
                               int64_t at, int64_t n) -> Result<std::vector<uint8_t>> {
          if (at < 0 || n < 0 || at > length || n > length - at) {
            return Status(EIO, "read past the end of an embedded leaf");
          }
          std::vector<uint8_t> out(static_cast<size_t>(n));
          B2NDFS_RETURN_IF_ERROR(frame->ReadStream(stream, offset + at, out.size(), out.data()));
          return out;
        };
        return FrameRef{std::move(read), length};
      }
      case Leaf::Where::kFile: {
        auto opened = base.OpenContainer(store + "/" + leaf.file, nullptr);
        if (!opened.ok()) {
          if (failed.ok()) failed = opened.status();
          return std::nullopt;
        }
        auto size = (*opened)->PartSize(source::kFramePart);
        if (!size.ok()) {
          if (failed.ok()) failed = size.status();
          return std::nullopt;
        }
        files.push_back(
            std::make_unique<Watched>(Watched{std::move(opened).value(), Status::Ok()}));
        return FrameRef{files.back()->Reader(0, *size), *size};
      }
    }
    return std::nullopt;
  };
  std::vector<std::string> dirs;
  for (const auto& [p, node] : index->nodes) {
    if (node.directory && node.problem.empty()) dirs.push_back(p);
  }
  for (const auto& dir : dirs) {
    auto table = CTableColumns(*index, dir, frames);
    if (!src->read_error.ok()) return src->read_error;
    if (!failed.ok()) return failed;
    for (const auto& f : files) {
      if (!f->read_error.ok()) return f->read_error;
    }
    if (!table) continue;
    index->nodes[dir].columns_json = std::move(table->columns_json);
    if (table->valid_files.empty()) continue;
    const std::string valid_dir = dir.empty() ? "valid" : dir + "/valid";
    index->nodes[valid_dir];  // a directory (CTableColumns checked the name is free)
    for (auto& [name, spec] : table->valid_files) {
      Node n;
      n.directory = false;
      n.valid_file = std::move(spec);
      index->nodes[valid_dir + "/" + name] = std::move(n);
    }
  }
  return Status::Ok();
}

}  // namespace

std::string EmbedFilePath(const std::string& store_path) { return store_path + "/embed.b2e"; }

std::string ShownName(const std::string& name) {
  for (const char* generated : kGeneratedNames) {
    if (name == generated) return "~" + name;
  }
  return !name.empty() && name.front() == '~' ? "~" + name : name;
}

std::string KeyName(const std::string& shown) {
  return !shown.empty() && shown.front() == '~' ? shown.substr(1) : shown;
}

Result<std::shared_ptr<const StoreIndex>> BuildStoreIndex(const source::Tree& base,
                                                          const std::string& path, StoreKind kind,
                                                          const EmbedUnitCache& units) {
  GlobalStoreIndexStats().parsed.fetch_add(1, std::memory_order_relaxed);
  auto index = std::make_shared<StoreIndex>();
  index->kind = kind;
  Builder builder(index.get());
  const std::string file = kind == StoreKind::kDir ? EmbedFilePath(path) : path;
  auto opened = base.OpenContainer(file, nullptr);
  if (!opened.ok()) {
    if (kind == StoreKind::kDir && source::IsGone(opened.status())) {
      // A .b2d without embed.b2e is not a store python-blosc2 opens.
      index->nodes[""].problem = "no embed.b2e: not a python-blosc2 store";
      builder.Finish("b2d", "", "");
      return std::shared_ptr<const StoreIndex>(std::move(index));
    }
    return opened.status();
  }
  Watched src{std::move(opened).value(), Status::Ok()};
  index->signature = src.source->signature();
  B2NDFS_ASSIGN_OR_RETURN(int64_t size, src.source->PartSize(source::kFramePart));
  const char* kind_name = kind == StoreKind::kZip ? "b2z" : kind == StoreKind::kDir ? "b2d" : "b2e";
  std::string problem;
  std::string tag;
  std::string embed_vlmeta;
  ParseCharge charge(units.cache);
  if (kind == StoreKind::kZip) {
    // Large reads (the central directory: up to kMaxCentralDirectorySize)
    // are charged before they are made.
    const FrameReadAt whole = src.Reader(0, size);
    auto zip = ReadZipDirectory(
        [&whole, &charge](int64_t at, int64_t n) {
          if (n >= (int64_t{64} << 10)) charge.Add(n);
          return whole(at, n);
        },
        size);
    if (!src.read_error.ok()) return src.read_error;
    if (zip.ok()) charge.Add(MembersBytes(*zip));
    if (!zip.ok()) {
      problem = zip.status().message();
    } else if (const int64_t estimate = EstimatedBytes(*zip); estimate > kMaxIndexBytes) {
      return OversizeVerdict(std::move(index), estimate, true);
    } else {
      index->zip = std::move(zip).value();
      std::vector<int64_t> data_offsets;
      B2NDFS_RETURN_IF_ERROR(ResolveMemberData(*src.source, size, &index->zip, &data_offsets));
      bool has_embed = false;
      for (size_t i = 0; i < index->zip.members.size(); ++i) {
        const ZipMember& m = index->zip.members[i];
        if (m.name == "embed.b2e") {
          has_embed = true;
          if (!m.problem.empty()) {
            problem = "embed.b2e: " + m.problem;
          } else {
            index->embed_offset = data_offsets[i];
            index->embed_size = m.size;
          }
          continue;
        }
        if (m.name.back() == '/') continue;  // a directory entry
        const std::string key = ExternalKey(m.name);
        if (key.empty()) {
          builder.Problem("/" + m.name, "a member without a .b2nd, .b2f or .b2b name");
          continue;
        }
        if (BaseName(key) == kVlmetaName && m.problem.empty()) {
          auto json = FrameVlmetaJson(src.Reader(data_offsets[i], m.size), m.size, {});
          if (!src.read_error.ok()) return src.read_error;
          builder.GroupVlmeta(Parent(KeyPath(key)),
                              json.ok() ? *json : format::RenderErrorJson(json.status().message()));
          continue;
        }
        Node n;
        if (!m.problem.empty()) {
          n = BrokenNode("zip member " + m.name + ": " + m.problem);
        } else {
          n.directory = false;
          n.leaf = Leaf{Leaf::Where::kMember, i, "", data_offsets[i], m.size};
        }
        builder.Add(key, KeyPath(key), std::move(n));
      }
      if (!has_embed && problem.empty()) problem = "no embed.b2e member: not a python-blosc2 store";
    }
  } else {
    index->embed_offset = 0;
    index->embed_size = size;
  }
  if (problem.empty() && index->embed_size > 0) {
    EmbedUnitCache frame_units{units.cache, units.identity + "|" + SignatureText(index->signature) +
                                                "|" + std::to_string(index->embed_offset)};
    auto frame = EmbedFrame::Open(src.Reader(index->embed_offset, index->embed_size),
                                  index->embed_size, std::move(frame_units));
    if (!src.read_error.ok()) return src.read_error;
    if (!frame.ok()) {
      problem = (kind == StoreKind::kEmbed ? "" : "embed.b2e: ") + frame.status().message();
    } else {
      index->embed = std::move(frame).value();
      tag = index->embed->tag();
      embed_vlmeta = index->embed->vlmeta_json();
    }
  }
  if (!problem.empty()) {
    index->nodes.clear();
    index->nodes[""].problem = problem;
    Builder broken(index.get());
    broken.Finish(kind_name, "", "");
    index->memory_bytes = 4096;
    return std::shared_ptr<const StoreIndex>(std::move(index));
  }
  if (kind == StoreKind::kDir) {
    // External leaf files, found by listing the directory tree (bounded).
    std::vector<std::string> pending{""};
    size_t listed = 0;
    while (!pending.empty()) {
      if (listed == 4096) {
        builder.Problem("/",
                        "more than 4096 directories (a cycle of links?): the rest are not shown");
        break;
      }
      const std::string rel = pending.back();
      pending.pop_back();
      ++listed;
      auto entries = base.List(rel.empty() ? path : path + "/" + rel);
      if (!entries.ok()) return entries.status();
      for (const auto& e : *entries) {
        const std::string name = rel.empty() ? e.name : rel + "/" + e.name;
        if (S_ISDIR(e.st.st_mode)) {
          pending.push_back(name);
          continue;
        }
        if (name == "embed.b2e") continue;
        const std::string key = ExternalKey(name);
        if (key.empty()) continue;  // other files are not part of the store
        if (BaseName(key) == kVlmetaName) {
          auto leaf = base.OpenContainer(path + "/" + name, nullptr);
          if (!leaf.ok()) return leaf.status();
          Watched w{std::move(leaf).value(), Status::Ok()};
          auto leaf_size = w.source->PartSize(source::kFramePart);
          if (!leaf_size.ok()) return leaf_size.status();
          auto json = FrameVlmetaJson(w.Reader(0, *leaf_size), *leaf_size, {});
          if (!w.read_error.ok()) return w.read_error;
          builder.GroupVlmeta(Parent(KeyPath(key)),
                              json.ok() ? *json : format::RenderErrorJson(json.status().message()));
          continue;
        }
        Node n;
        n.directory = false;
        n.leaf = Leaf{Leaf::Where::kFile, 0, name, 0, static_cast<int64_t>(e.st.st_size)};
        builder.Add(key, KeyPath(key), std::move(n));
      }
    }
  }
  if (index->embed) {
    AddEmbedded(&builder, *index->embed, src.Reader(index->embed_offset, index->embed_size));
    if (!src.read_error.ok()) return src.read_error;
  }
  B2NDFS_RETURN_IF_ERROR(AddTables(base, path, &src, index.get()));
  builder.Finish(kind_name, tag, embed_vlmeta);
  const int64_t bytes = IndexMemoryBytes(*index);
  if (bytes > kMaxIndexBytes) return OversizeVerdict(std::move(index), bytes, false);
  index->memory_bytes = bytes;
  return std::shared_ptr<const StoreIndex>(std::move(index));
}

}  // namespace b2ndfs::stores::internal
