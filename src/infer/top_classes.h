// The top-k of one row of logits, shared by classify and the server's :classify answer. Its own
// file, with nothing but the standard library, so the request-parsing fuzz harness can compile
// it without the trainer.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace ic {

// The min(k, classes) most likely classes of one row of logits, best first (ties: the lower
// label), with their softmax probabilities (computed in double): classify's and the server's
// :classify answer.
std::vector<std::pair<int64_t, float>> top_classes(const float* logits, int64_t classes, int k);

}  // namespace ic
