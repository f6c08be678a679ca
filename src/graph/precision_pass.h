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

#include <functional>

#include "core/status.h"
#include "graph/graph.h"

namespace ic {

struct ActivationPrecisionStats {
  int bf16_values = 0;           // values the arena now holds in bf16
  int casts = 0;                 // Cast nodes added
  int float32_convolutions = 0;  // convolutions kept in float32 by `compute_type`
};

// The type a convolution would compute in if its activations were bf16 (the desc as given has
// them so): Backend::conv_compute_type, which times a bf16 convolution in float32 too.
using ConvComputeType = std::function<Result<DType>(const Conv2dDesc&)>;

// `graph` (no int8 layers) with its activations in bf16. A training graph's gradients stay f32
// (the loss reads f32 logits; a cast's backward copies the f32 gradient).
//
// With `compute_type` (inference graphs), bf16 only where it pays: a convolution that computes
// in float32 anyway (it timed faster so; without AMX that is most of them at small batches)
// keeps float32 activations, since holding them in bf16 would add a conversion on each side of
// it; every other op with a bf16 form follows its largest input, so that the float32 and bf16
// regions of the graph meet at as few (and as small) casts as possible.
Result<Graph> store_activations_in_bf16(const Graph& graph,
                                        ActivationPrecisionStats* stats = nullptr,
                                        const ConvComputeType& compute_type = {});

}  // namespace ic
