// Rewrites applied to a Graph before it is compiled. Each pass returns a new graph that
// computes the same logits and losses with fewer nodes. Value ids are kept (a value that a
// pass makes unused keeps its slot with producer kNone and no consumers), so endpoints,
// logits and losses stay valid; node ids change.
#pragma once

#include "graph/graph.h"

namespace ic {

struct PassStats {
  int fused_batch_norm_relu = 0;     // Relu nodes folded into the BatchNorm before them
  int removed_identity_dropout = 0;  // inference dropout nodes removed
};

// BatchNorm whose output is read only by a Relu (and is not an endpoint, the logits or a
// loss) becomes BatchNorm{fused_relu = true} writing the Relu's output; the Relu goes.
Graph fuse_batch_norm_relu(const Graph& graph, PassStats* stats = nullptr);

// Dropout in an inference graph is the identity: its readers read its input instead.
Graph remove_identity_dropout(const Graph& graph, PassStats* stats = nullptr);

// All passes, in order.
Graph optimize_graph(const Graph& graph, PassStats* stats = nullptr);

// consumers[v]: the nodes that read value v, in node order (a node reading v twice is
// listed twice).
std::vector<std::vector<NodeId>> value_consumers(const Graph& graph);

// Helpers of the passes (here and in inference_passes.h) ----------------------------------
// visible[v]: a pass must not rename or remove v, because the caller reads it after
// forward(): the images, labels, logits, losses and endpoints.
std::vector<bool> externally_visible(const Graph& graph);
// The values an inference program reads after forward(): the images, labels, logits and
// losses. Unlike externally_visible, not the endpoints: an inference graph keeps them only as
// names, so its precision passes (bf16, u8) may change their types.
std::vector<bool> read_after_forward(const Graph& graph);
// The graph without the nodes marked in `removed`, every value's producer recomputed.
Graph without_nodes(Graph graph, const std::vector<bool>& removed);
// Drops the endpoints whose values no node produces any more (the images excepted): an
// inference pass that removes a value nobody reads after forward() takes its name with it.
void drop_unproduced_endpoints(Graph& graph);

}  // namespace ic
