#include "infer/tf_graph_def.h"

namespace ic {

tensorflow::NodeDef* TfGraphDefBuilder::add(const std::string& name, const std::string& op,
                                            const std::vector<std::string>& inputs) {
  std::string unique = name;
  for (int k = 1; names_.count(unique) != 0; ++k) unique = name + "_" + std::to_string(k);
  names_.insert(unique);
  tensorflow::NodeDef* node = nodes_->Add();
  node->set_name(unique);
  node->set_op(op);
  for (const std::string& input : inputs) node->add_input(input);
  return node;
}

tensorflow::TensorShapeProto shape_proto(const std::vector<int64_t>& dims) {
  tensorflow::TensorShapeProto shape;
  for (int64_t d : dims) shape.add_dim()->set_size(d);
  return shape;
}

std::string TfGraphDefBuilder::const_int32(const std::string& name,
                                           const std::vector<int32_t>& values, bool scalar) {
  tensorflow::NodeDef* node = add(name, "Const");
  set_type(node, "dtype", tensorflow::DT_INT32);
  tensorflow::TensorProto* t = (*node->mutable_attr())["value"].mutable_tensor();
  t->set_dtype(tensorflow::DT_INT32);
  *t->mutable_tensor_shape() =
      scalar ? shape_proto({}) : shape_proto({static_cast<int64_t>(values.size())});
  for (int32_t v : values) t->add_int_val(v);
  return node->name();
}

std::string TfGraphDefBuilder::const_int32(const std::string& name,
                                           const std::vector<int32_t>& values,
                                           const std::vector<int64_t>& shape) {
  const std::string made = const_int32(name, values);
  tensorflow::NodeDef& node = nodes_->at(nodes_->size() - 1);
  *(*node.mutable_attr())["value"].mutable_tensor()->mutable_tensor_shape() = shape_proto(shape);
  return made;
}

std::string TfGraphDefBuilder::const_strings(const std::string& name,
                                             const std::vector<std::string>& values, bool scalar) {
  tensorflow::NodeDef* node = add(name, "Const");
  set_type(node, "dtype", tensorflow::DT_STRING);
  tensorflow::TensorProto* t = (*node->mutable_attr())["value"].mutable_tensor();
  t->set_dtype(tensorflow::DT_STRING);
  *t->mutable_tensor_shape() =
      scalar ? shape_proto({}) : shape_proto({static_cast<int64_t>(values.size())});
  for (const std::string& v : values) t->add_string_val(v);
  return node->name();
}

std::string TfGraphDefBuilder::const_filled(const std::string& name,
                                            const std::vector<int64_t>& shape, float value) {
  tensorflow::NodeDef* node = add(name, "Const");
  set_type(node, "dtype", tensorflow::DT_FLOAT);
  tensorflow::TensorProto* t = (*node->mutable_attr())["value"].mutable_tensor();
  t->set_dtype(tensorflow::DT_FLOAT);
  *t->mutable_tensor_shape() = shape_proto(shape);
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  if (count > 0) t->add_float_val(value);  // an empty tensor lists no values
  return node->name();
}

std::string TfGraphDefBuilder::const_floats(const std::string& name,
                                            const std::vector<float>& values) {
  tensorflow::NodeDef* node = add(name, "Const");
  set_type(node, "dtype", tensorflow::DT_FLOAT);
  tensorflow::TensorProto* t = (*node->mutable_attr())["value"].mutable_tensor();
  t->set_dtype(tensorflow::DT_FLOAT);
  *t->mutable_tensor_shape() = shape_proto({static_cast<int64_t>(values.size())});
  for (float v : values) t->add_float_val(v);
  return node->name();
}

std::string TfGraphDefBuilder::const_double(const std::string& name, double value) {
  tensorflow::NodeDef* node = add(name, "Const");
  set_type(node, "dtype", tensorflow::DT_DOUBLE);
  tensorflow::TensorProto* t = (*node->mutable_attr())["value"].mutable_tensor();
  t->set_dtype(tensorflow::DT_DOUBLE);
  *t->mutable_tensor_shape() = shape_proto({});
  t->add_double_val(value);
  return node->name();
}

void set_type(tensorflow::NodeDef* node, const std::string& key, tensorflow::DataType type) {
  (*node->mutable_attr())[key].set_type(type);
}
void set_int(tensorflow::NodeDef* node, const std::string& key, int64_t value) {
  (*node->mutable_attr())[key].set_i(value);
}
void set_float(tensorflow::NodeDef* node, const std::string& key, float value) {
  (*node->mutable_attr())[key].set_f(value);
}
void set_bool(tensorflow::NodeDef* node, const std::string& key, bool value) {
  (*node->mutable_attr())[key].set_b(value);
}
void set_string(tensorflow::NodeDef* node, const std::string& key, const std::string& value) {
  (*node->mutable_attr())[key].set_s(value);
}
void set_ints(tensorflow::NodeDef* node, const std::string& key,
              const std::vector<int64_t>& values) {
  tensorflow::AttrValue::ListValue* list = (*node->mutable_attr())[key].mutable_list();
  for (int64_t v : values) list->add_i(v);
}
void set_types(tensorflow::NodeDef* node, const std::string& key,
               const std::vector<tensorflow::DataType>& types) {
  tensorflow::AttrValue::ListValue* list = (*node->mutable_attr())[key].mutable_list();
  for (tensorflow::DataType t : types) list->add_type(t);
}
void set_shape(tensorflow::NodeDef* node, const std::string& key,
               const std::vector<int64_t>& dims) {
  *(*node->mutable_attr())[key].mutable_shape() = shape_proto(dims);
}

}  // namespace ic
