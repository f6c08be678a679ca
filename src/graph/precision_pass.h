// Where a graph keeps its activations in bfloat16: every value between two ops, so
// that no kernel converts its input or output on the way (a convolution reads bf16 and writes
// bf16, a pool or a concat moves half the bytes). The conversions happen once, where a value
// enters or leaves the bf16 part of the graph:
//   - the images (f32) are cast to bf16 before their first reader;
//   - the logits are cast back to f32, so CompiledGraph::logits() stays float32;
//   - an op with no bf16 form (the loss, Quantize) reads a cast of its input.
// The weights, biases and batch-norm statistics stay f32 (a bf16 convolution converts its
// constant weights once).
#pragma once

#include "core/status.h"
#include "graph/graph.h"

namespace ic {

struct ActivationPrecisionStats {
  int bf16_values = 0;  // values the arena now holds in bf16
  int casts = 0;        // Cast nodes added
};

// `graph` (no int8 layers) with its activations in bf16. A training graph's gradients stay f32
// (the loss reads f32 logits; a cast's backward copies the f32 gradient).
Result<Graph> store_activations_in_bf16(const Graph& graph,
                                        ActivationPrecisionStats* stats = nullptr);

}  // namespace ic
