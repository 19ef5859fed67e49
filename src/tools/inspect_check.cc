// b2ndfs-inspect check: walks SOURCE as the mount shows it (inspect.h) and
// says, one line each, whether every container, store, store leaf and CTable
// below it reads. What is verified (README.md, "Inspecting without
// mounting"): the metadata decodes (meta.json is not {"error": ...}, the
// same text the mount shows); without --quick, every byte of each
// container's data (or of each item and batch, of each CTable's valid/
// files) is read through the mount's decoders, so each chunk's and block's
// header, sizes, offsets and codec ids are checked and each block
// decompresses. Blosc2 chunks carry no checksum: bytes changed inside
// compressed data that still decompress are not noticed.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "inspect.h"

namespace b2ndfs::inspect {
namespace {

// Directories deeper than this below SOURCE are not walked (a loop of
// mirrored links cannot keep the walk going).
constexpr int kMaxDepth = 64;

// The reason of a read error without the file name the core puts first
// ("sub/a.b2nd: chunk 3: ..."): the tool names the container itself.
std::string Reason(const std::string& message, const std::string& rel) {
  const size_t colon = message.find(": ");
  if (colon == std::string::npos) return message;
  const std::string name = message.substr(0, colon);
  const std::string base = rel.substr(rel.rfind('/') + 1);
  const bool names_it = name.find(' ') == std::string::npos &&
                        (base.empty() || name.size() >= base.size()) &&
                        name.compare(name.size() - base.size(), base.size(), base) == 0;
  return names_it ? message.substr(colon + 2) : message;
}

std::string Join(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}

// "1 item", "3 items".
std::string Count(size_t n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

class Checker {
 public:
  Checker(vfs::Filesystem& fs, std::string root, bool quick)
      : fs_(fs), root_(std::move(root)), quick_(quick) {}

  void Visit(vfs::Ino ino, const std::string& rel, int depth);
  int Summary() const;

 private:
  std::string Path(const std::string& rel) const { return rel.empty() ? root_ : root_ + "/" + rel; }
  void Ok(const std::string& rel, const std::string& note) {
    std::printf("ok      %s%s\n", Path(rel).c_str(),
                note.empty() ? "" : (" (" + note + ")").c_str());
  }
  void Broken(const std::string& rel, const std::string& why) {
    std::printf("BROKEN  %s: %s\n", Path(rel).c_str(), why.c_str());
    ++broken_;
  }
  // Reads a whole file of `dir`; the reason when it fails.
  std::string ReadAll(vfs::Ino dir, const std::string& name, const std::string& rel);
  // Reads every file of the directory `name` of `dir` (items/, batches/,
  // valid/); the number read, or a problem.
  Result<size_t> ReadEach(vfs::Ino dir, const std::string& name, const std::string& rel);
  void Container(vfs::Ino ino, const std::string& rel, const std::string& meta,
                 const std::vector<vfs::DirEntry>& entries);
  void Table(vfs::Ino ino, const std::string& rel);

  vfs::Filesystem& fs_;
  const std::string root_;
  const bool quick_;
  std::set<vfs::Ino> visited_;
  size_t containers_ = 0;
  size_t stores_ = 0;
  size_t tables_ = 0;
  int broken_ = 0;
};

bool Has(const std::vector<vfs::DirEntry>& entries, const std::string& name, bool dir) {
  return std::any_of(entries.begin(), entries.end(), [&](const vfs::DirEntry& e) {
    return e.name == name && (S_ISDIR(e.type) != 0) == dir;
  });
}

std::string Checker::ReadAll(vfs::Ino dir, const std::string& name, const std::string& rel) {
  auto attr = fs_.Lookup(dir, name);
  if (!attr.ok()) return name + ": " + attr.status().message();
  Status read =
      ReadFile(fs_, attr->st.st_ino, 0, -1, [](const uint8_t*, size_t) { return Status::Ok(); });
  return read.ok() ? "" : Reason(read.message(), rel);
}

Result<size_t> Checker::ReadEach(vfs::Ino dir, const std::string& name, const std::string& rel) {
  B2NDFS_ASSIGN_OR_RETURN(vfs::Attr attr, fs_.Lookup(dir, name));
  B2NDFS_ASSIGN_OR_RETURN(std::vector<vfs::DirEntry> files, List(fs_, attr.st.st_ino));
  size_t n = 0;
  for (const vfs::DirEntry& file : files) {
    if (S_ISDIR(file.type)) continue;
    if (std::string problem = ReadAll(attr.st.st_ino, file.name, rel); !problem.empty()) {
      return Status(EIO, name + "/" + file.name + ": " + Reason(problem, file.name));
    }
    ++n;
  }
  return n;
}

// What a carrier's meta.json says about its recipe: whether b2ndfs serves
// it evaluated, and why not.
std::string CarrierNote(const std::string& meta) {
  const size_t at = meta.find("\"evaluation\": ");
  if (at == std::string::npos) {
    return "carrier: its recipe is shown in meta.json; not an expression b2ndfs evaluates, so no "
           "data";
  }
  const std::string evaluation = meta.substr(at);
  const std::string expression = StringField(meta, "expression");
  const std::string what = expression.empty() ? "carrier" : "carrier of '" + expression + "'";
  if (ScalarField(evaluation, "evaluated") == "true") return what + ": evaluated";
  std::string why = StringField(evaluation, "error");
  const std::string said = "not evaluated: ";
  if (why.rfind(said, 0) == 0) why = why.substr(said.size());
  return what + ": not evaluated" + (why.empty() ? "" : ": " + why);
}

void Checker::Container(vfs::Ino ino, const std::string& rel, const std::string& meta,
                        const std::vector<vfs::DirEntry>& entries) {
  ++containers_;
  // A frame header naming an id nothing writes (codec/builtin.h) is damage,
  // even where the chunks still read.
  if (const std::string needs = StringField(meta, "unsupported");
      needs.find(" is damaged: ") != std::string::npos) {
    return Broken(rel, needs);
  }
  std::string note = meta.find("\"recipe\": ") != std::string::npos ? CarrierNote(meta) : "";
  if (quick_) return Ok(rel, note);
  const auto add = [&note](const std::string& more) { note += (note.empty() ? "" : "; ") + more; };
  if (Has(entries, "data", false)) {
    if (std::string problem = ReadAll(ino, "data", rel); !problem.empty()) {
      return Broken(rel, problem);
    }
  }
  for (const char* dir : {"items", "batches"}) {
    if (!Has(entries, dir, true)) continue;
    auto n = ReadEach(ino, dir, rel);
    if (!n.ok()) return Broken(rel, n.status().message());
    // Each item or batch is shown twice (.msgpack and .json) or thrice.
    add(Count(*n, std::string(dir) == "items" ? "item file" : "batch file") + " read");
  }
  Ok(rel, note);
}

void Checker::Table(vfs::Ino ino, const std::string& rel) {
  ++tables_;
  auto columns = fs_.Lookup(ino, "columns.json");
  auto text =
      columns.ok() ? ReadText(fs_, columns->st.st_ino) : Result<std::string>(columns.status());
  if (!text.ok()) return Broken(rel, "columns.json: " + text.status().message());
  size_t n = 0;
  for (size_t at = text->find("\"path\": "); at != std::string::npos;
       at = text->find("\"path\": ", at + 1)) {
    ++n;
  }
  std::string note = "CTable: " + ScalarField(*text, "rows") + " rows, " +
                     ScalarField(*text, "valid_rows") + " live, " + Count(n, "column");
  if (const std::string why = StringField(*text, "valid_rows_error"); !why.empty()) {
    note += "; live rows unknown: " + why;
  }
  if (!quick_ && fs_.Lookup(ino, "valid").ok()) {
    auto read = ReadEach(ino, "valid", rel);
    if (!read.ok()) return Broken(rel, read.status().message());
    note += "; " + Count(*read, "valid/ file") + " read";
  }
  Ok(rel, note);
}

void Checker::Visit(vfs::Ino ino, const std::string& rel, int depth) {
  if (depth > kMaxDepth || !visited_.insert(ino).second) return;
  auto listed = List(fs_, ino);
  if (!listed.ok()) return Broken(rel, listed.status().message());
  std::vector<vfs::DirEntry> entries = std::move(listed).value();
  std::sort(entries.begin(), entries.end(),
            [](const vfs::DirEntry& a, const vfs::DirEntry& b) { return a.name < b.name; });
  if (Has(entries, "meta.json", false)) {
    auto meta = MetaJson(fs_, rel);
    if (!meta.ok()) return Broken(rel, "meta.json: " + meta.status().message());
    if (std::string error = ErrorOf(*meta); !error.empty()) {
      // What the mount shows: a directory holding only this meta.json.
      ++containers_;
      return Broken(rel, error);
    }
    // A container directory answers the user.b2nd.* attributes; its
    // subdirectories are its views.
    if (fs_.GetXattr(ino, "user.b2nd.shape").ok()) return Container(ino, rel, *meta, entries);
    if (const std::string kind = StringField(*meta, "store"); !kind.empty()) {
      ++stores_;
      Ok(rel, kind + " store: " + StringField(*meta, "type") + ", " + ScalarField(*meta, "leaves") +
                  (ScalarField(*meta, "leaves") == "1" ? " leaf" : " leaves"));
    }
  }
  const bool table = Has(entries, "columns.json", false);
  if (table) Table(ino, rel);
  for (const vfs::DirEntry& entry : entries) {
    if (!S_ISDIR(entry.type)) continue;
    if (depth == 0 && entry.name == vfs::kControlDirName) continue;
    if (table && entry.name == "valid") continue;
    auto attr = fs_.Lookup(ino, entry.name);
    if (!attr.ok()) {
      Broken(Join(rel, entry.name), attr.status().message());
      continue;
    }
    Visit(attr->st.st_ino, Join(rel, entry.name), depth + 1);
    // As the kernel would: a walk of a large tree keeps no record per name.
    fs_.Forget(attr->st.st_ino, 1);
  }
}

int Checker::Summary() const {
  std::fflush(stdout);
  std::string counted =
      std::to_string(containers_) + " container(s), " + std::to_string(broken_) + " broken";
  if (stores_ > 0 || tables_ > 0) {
    counted += " (" + Count(stores_, "store") + ", " + Count(tables_, "table") + ")";
  }
  // What was verified, in a few words (README.md, "Errors", says the rest).
  std::fprintf(stderr, "b2ndfs-inspect: %s; %s\n", counted.c_str(),
               quick_ ? "metadata only (frames, metalayers, stores, tables; no block read)"
                      : "all data read: every header, size, offset and codec id checked, every "
                        "block decompressed (Blosc2 keeps no checksum of the data itself)");
  return broken_ > 0 ? 1 : 0;
}

}  // namespace

int Check(const std::string& source, bool quick) {
  std::string root = source;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  Inspected inspected(root);
  Checker checker(*inspected.fs, root, quick);
  checker.Visit(vfs::kRootIno, "", 0);
  return checker.Summary();
}

}  // namespace b2ndfs::inspect
