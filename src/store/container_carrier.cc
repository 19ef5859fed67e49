// Container's carrier: a saved expression whose blocks are computed from
// its operands when it can be (carrier.h).
#include "b2ndfs/store/container.h"
#include "block_loader.h"
#include "carrier.h"
#include "frame_metadata.h"

namespace b2ndfs::store {

// A carrier whose expression can be computed as NumPy would is served as an
// array whose blocks are made, not decompressed; otherwise meta.json's
// "evaluation" says why not. Never an error of the container.
void Container::LoadEvaluation(const OperandScope& scope) {
  auto recipe = meta_->DecompressedVlmeta(tag_.recipe_vlmeta, *context_->decompressors);
  if (!recipe.ok() || !*recipe) return;  // meta.json says what is wrong with it
  EvaluationAttempt attempt = PrepareEvaluation(**recipe, *layout_, npy_descr_, scope);
  evaluation_error_ = std::move(attempt.error);
  watched_ = std::move(attempt.watched);
  if (attempt.evaluation) {
    evaluation_ = std::move(attempt.evaluation);
    // The loader is ours alone until Open() returns.
    const_cast<BlockLoader&>(*loader_).set_maker(evaluation_.get());
  }
}

std::optional<struct stat> Container::derived_readers() const {
  return evaluation_ ? evaluation_->readers() : std::nullopt;
}

}  // namespace b2ndfs::store
