// `--mode=summary`: the layer table of a built model.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace ic {

// One row per end point: the nodes built after the previous end point's producer, up to and
// including this end point's producer (end points are recorded in build order, so every
// parameter and multiply-add lands in exactly one row).
struct SummaryRow {
  std::string endpoint;
  Shape shape;                // without the batch dimension
  int64_t parameters = 0;     // trainable elements of the row's nodes
  int64_t multiply_adds = 0;  // per image, convolutions and dense layers
};
std::vector<SummaryRow> summary_rows(const Graph& graph);

// Prints the rows as a table, then the totals as lines (exact integers, per image):
//   trainable parameters: 27145970
//   non-trainable parameters: 36224
//   multiply-adds: 5713...
void print_summary(const Graph& graph, std::ostream& out);

}  // namespace ic
