#include "b2ndfs/source/provenance.h"

#include <vector>

namespace b2ndfs::source {
namespace {

bool CanRead(const struct stat& st, mode_t bit) { return (st.st_mode & bit) != 0; }

// Whether user `uid` may read `in` whatever groups it is in: its owner bit if
// it owns it, else both its group and other bits (which of the two applies
// depends on membership, which is not looked up).
bool OwnerReads(uid_t uid, const struct stat& in) {
  if (in.st_uid == uid) return CanRead(in, S_IRUSR);
  return CanRead(in, S_IRGRP) && CanRead(in, S_IROTH);
}

// Whether every member of `gid` that is not the result's owner may read
// `in`: such a member may be its owner (owner bit), is in its group when
// the groups are the same (group bit), or may or may not be (both bits).
bool GroupReads(gid_t gid, const struct stat& in) {
  if (!CanRead(in, S_IRUSR) || !CanRead(in, S_IRGRP)) return false;
  return in.st_gid == gid || CanRead(in, S_IROTH);
}

// Whether any other user may read `in`: it may own it, be in its group, or
// neither.
bool OthersRead(const struct stat& in) {
  return CanRead(in, S_IRUSR) && CanRead(in, S_IRGRP) && CanRead(in, S_IROTH);
}

}  // namespace

struct stat SearchedAs(const struct stat& dir) {
  struct stat st = dir;
  st.st_mode = (dir.st_mode & ~static_cast<mode_t>(0777)) | ((dir.st_mode & 0111) << 2);
  return st;
}

std::optional<struct stat> MostRestrictive(std::span<const struct stat> inputs) {
  if (inputs.empty()) return std::nullopt;
  // The owner: the first input's owner, unless another input's owner could
  // read them all and it could not.
  std::optional<uid_t> owner;
  for (const struct stat& candidate : inputs) {
    bool all = true;
    for (const struct stat& in : inputs) all = all && OwnerReads(candidate.st_uid, in);
    if (all) {
      owner = candidate.st_uid;
      break;
    }
  }
  std::optional<gid_t> group;
  for (const struct stat& candidate : inputs) {
    bool all = true;
    for (const struct stat& in : inputs) all = all && GroupReads(candidate.st_gid, in);
    if (all) {
      group = candidate.st_gid;
      break;
    }
  }
  bool others = true;
  for (const struct stat& in : inputs) others = others && OthersRead(in);
  if (!owner && !group && !others) return std::nullopt;
  struct stat out = inputs[0];
  out.st_uid = owner.value_or(inputs[0].st_uid);
  out.st_gid = group.value_or(inputs[0].st_gid);
  out.st_mode = (inputs[0].st_mode & S_IFMT) | (owner ? S_IRUSR : 0) | (group ? S_IRGRP : 0) |
                (others ? S_IROTH : 0);
  return out;
}

struct stat BoundBy(std::span<const struct stat> inputs) {
  if (auto bound = MostRestrictive(inputs)) return *bound;
  struct stat nobody = inputs[0];
  nobody.st_mode &= ~static_cast<mode_t>(0777);
  return nobody;
}

}  // namespace b2ndfs::source
