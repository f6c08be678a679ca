// Successive halving (a sweep config's "schedule": "halving", as in Hyperband and ASHA): every
// variant trains to the first rung's step; the best 1/eta of them, by the sweep's metric,
// continue from their checkpoints to the next rung; and so on to the budget's train_steps.
// These are the schedule's rules, apart from the training that sweep.cc does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "train/choices.h"

namespace ic {

// The global step each rung trains to, increasing, the last one train_steps. With
// first_rung_steps > 0 the first rung is that and each next one eta times the one before;
// with 0, there are as many rungs as halvings take `variants` down to one, the last being
// train_steps and each earlier one 1/eta of the next (at least step 1).
std::vector<int64_t> halving_rungs(size_t variants, int eta, int64_t train_steps,
                                   int64_t first_rung_steps);

// How many of the `entering` variants of a rung go on to the next: ceil(entering / eta), at
// least one.
size_t halving_keep(size_t entering, int eta);

// The positions of the best `keep` scores (higher is better for max, lower for min; a variant
// without a score is worst), in rank order; ties go to the earlier position.
std::vector<size_t> halving_survivors(const std::vector<std::optional<double>>& scores,
                                      ExportBestMode mode, size_t keep);

}  // namespace ic
