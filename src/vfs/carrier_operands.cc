#include "carrier_operands.h"

#include <algorithm>

#include "mirror.h"

namespace b2ndfs::vfs {
namespace {

class MountOperands : public store::OperandOpener {
 public:
  MountOperands(const source::Tree* tree, EntryFinder entries)
      : tree_(tree), entries_(std::move(entries)) {}

  store::Operand Open(const store::OperandScope& scope, const std::string& urlpath) const override {
    store::Operand out;
    const std::string& root = tree_->root();
    const std::string& carrier = scope.path;
    if (carrier.compare(0, root.size(), root) != 0) {
      out.error = "the carrier is outside the mount";
      return out;
    }
    // The carrier's directory, as components below the root.
    std::vector<std::string> parts;
    auto split = [](const std::string& text, std::vector<std::string>* into, bool up_allowed,
                    std::string* error) {
      size_t begin = 0;
      while (begin <= text.size()) {
        size_t end = text.find('/', begin);
        if (end == std::string::npos) end = text.size();
        const std::string part = text.substr(begin, end - begin);
        begin = end + 1;
        if (part.empty() || part == ".") continue;
        if (part == "..") {
          if (!up_allowed || into->empty()) {
            *error = "the path leads outside the mount";
            return;
          }
          into->pop_back();
          continue;
        }
        into->push_back(part);
      }
    };
    std::string error;
    split(carrier.substr(root.size()), &parts, false, &error);
    if (!parts.empty()) parts.pop_back();  // the carrier's own name
    split(urlpath, &parts, true, &error);
    if (!error.empty() || parts.empty()) {
      out.error = error.empty() ? "the path names no container" : error;
      return out;
    }
    std::string path = root;
    std::string shown;
    for (const std::string& p : parts) {
      path += "/" + p;
      shown += (shown.empty() ? "" : "/") + p;
    }
    if (path == carrier ||
        std::find(scope.chain.begin(), scope.chain.end(), path) != scope.chain.end()) {
      out.error = "a cycle of carriers (" + shown + " is being evaluated already)";
      return out;
    }
    // scope.path is carrier number chain.size() + 1 of this evaluation.
    if (static_cast<int>(scope.chain.size()) >= store::kMaxCarrierDepth) {
      out.error = "carriers nest deeper than " + std::to_string(store::kMaxCarrierDepth);
      return out;
    }
    if (scope.budget && scope.budget->fetch_sub(1) <= 0) {
      out.error = "the evaluation would open more than " + std::to_string(store::kMaxOperandOpens) +
                  " containers";
      return out;
    }
    out.path = path;
    out.shown = shown;
    auto st = tree_->StatBeneath(path, /*confined=*/true);
    if (!st.ok()) {
      out.missing = source::IsGone(st.status());
      // What is there now, so that the carrier's version stays until it
      // changes (a link out of the mount is there, and refused).
      if (!out.missing) {
        if (auto probe = tree_->Probe(path); probe.ok()) out.version = *probe;
      }
      out.error = out.missing                           ? "no such container in the mount"
                  : st.status().error_number() == EXDEV ? "a symbolic link on its path leads "
                                                          "out of the mount"
                                                        : st.status().message();
      return out;
    }
    const auto kind = MirroredKind(*tree_, path, parts.back(), *st);
    if (!kind || *kind != MirroredType::kContainer) {
      out.error = "not a container";
      // Its version, so that the carrier's stays until it changes.
      if (auto probe = tree_->Probe(path); probe.ok()) out.version = *probe;
      return out;
    }
    store::OperandScope inner{this, path, scope.chain, scope.budget, *st};
    inner.chain.push_back(carrier);
    // The container's generation, as a direct read of it finds it (its
    // cache_id, its staleness); one whose operands changed meanwhile is
    // stale, and the next one is asked for once.
    Result<ContainerEntry::OperandOpen> opened = Status(ESTALE, "unset");
    for (int attempt = 0; attempt < 2; ++attempt) {
      opened = entries_(path)->ForOperand(inner);
      if (opened.ok() || opened.status().error_number() != ESTALE) break;
    }
    if (!opened.ok()) {
      out.missing = source::IsGone(opened.status());
      out.error = opened.status().message();
      return out;
    }
    out.version = opened->generation->signature();
    out.container = std::move(opened->container);
    // The generation's cached blocks stay while the carrier holds it.
    out.keep = std::move(opened->generation);
    // An operand that is itself computed is read by whoever may read what
    // it is computed from (its readers include its own file's).
    out.readers = out.container->derived_readers().value_or(*st);
    return out;
  }

 private:
  const source::Tree* const tree_;
  const EntryFinder entries_;
};

}  // namespace

std::shared_ptr<const store::OperandOpener> MakeMountOperands(const source::Tree* tree,
                                                              EntryFinder entries) {
  return std::make_shared<const MountOperands>(tree, std::move(entries));
}

std::unique_ptr<store::OperandScope> TopScope(const store::OperandOpener* opener,
                                              const std::string& path, const struct stat& readers) {
  if (opener == nullptr) return nullptr;
  return std::make_unique<store::OperandScope>(store::OperandScope{
      opener, path, {}, std::make_shared<std::atomic<int>>(store::kMaxOperandOpens), readers});
}

bool OperandsUnchanged(const source::Tree& tree,
                       const std::vector<store::OperandVersion>& versions) {
  for (const auto& [path, version] : versions) {
    auto probe = tree.Probe(path);
    if (probe.ok()) {
      if (!version || !(*probe == *version)) return false;
    } else if (source::IsGone(probe.status())) {
      if (version) return false;
    }
  }
  return true;
}

}  // namespace b2ndfs::vfs
