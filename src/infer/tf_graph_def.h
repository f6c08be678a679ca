// A small builder of TensorFlow GraphDefs (proto/graph.proto): nodes with unique names, the
// attributes TensorFlow's op registry requires, and constants. The SavedModel exporter
// (saved_model_graph.h) writes the inference network with it.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "proto/graph.pb.h"

namespace ic {

class TfGraphDefBuilder {
 public:
  TfGraphDefBuilder() : nodes_(graph_.mutable_node()) {}
  // Builds the body of a function instead: nodes go to `function->node_def`.
  explicit TfGraphDefBuilder(tensorflow::FunctionDef* function)
      : nodes_(function->mutable_node_def()) {}
  TfGraphDefBuilder(const TfGraphDefBuilder&) = delete;
  TfGraphDefBuilder& operator=(const TfGraphDefBuilder&) = delete;

  // Adds a node named `name` (made unique with "_1", "_2"... as TensorFlow does) and returns
  // it; its name is node->name(). Inputs are "node", "node:k" or "^node".
  tensorflow::NodeDef* add(const std::string& name, const std::string& op,
                           const std::vector<std::string>& inputs = {});

  // Constants; the node's name is returned.
  std::string const_int32(const std::string& name, const std::vector<int32_t>& values,
                          bool scalar = false);
  // values in row-major order over `shape` (Pad's [4,2] paddings).
  std::string const_int32(const std::string& name, const std::vector<int32_t>& values,
                          const std::vector<int64_t>& shape);
  std::string const_strings(const std::string& name, const std::vector<std::string>& values,
                            bool scalar = false);
  // A float constant of `shape` whose every element is `value` (one value in the proto:
  // TensorFlow repeats the last value over the shape).
  std::string const_filled(const std::string& name, const std::vector<int64_t>& shape, float value);
  std::string const_double(const std::string& name, double value);                      // a scalar
  std::string const_floats(const std::string& name, const std::vector<float>& values);  // 1-D

  tensorflow::GraphDef& graph() { return graph_; }

 private:
  tensorflow::GraphDef graph_;
  google::protobuf::RepeatedPtrField<tensorflow::NodeDef>* nodes_;
  std::set<std::string> names_;
};

// Attribute setters.
void set_type(tensorflow::NodeDef* node, const std::string& key, tensorflow::DataType type);
void set_int(tensorflow::NodeDef* node, const std::string& key, int64_t value);
void set_float(tensorflow::NodeDef* node, const std::string& key, float value);
void set_bool(tensorflow::NodeDef* node, const std::string& key, bool value);
void set_string(tensorflow::NodeDef* node, const std::string& key, const std::string& value);
void set_ints(tensorflow::NodeDef* node, const std::string& key,
              const std::vector<int64_t>& values);
void set_types(tensorflow::NodeDef* node, const std::string& key,
               const std::vector<tensorflow::DataType>& types);
// A shape attribute; -1 is an unknown dimension.
void set_shape(tensorflow::NodeDef* node, const std::string& key, const std::vector<int64_t>& dims);
tensorflow::TensorShapeProto shape_proto(const std::vector<int64_t>& dims);

}  // namespace ic
