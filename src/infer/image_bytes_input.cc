#include "infer/image_bytes_input.h"

#include <utility>
#include <vector>

namespace ic {
namespace {

using tensorflow::DT_BOOL;
using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_STRING;
using tensorflow::DT_UINT8;
using tensorflow::NodeDef;

constexpr char kCond[] = "image_bytes_map_cond";
constexpr char kBody[] = "image_bytes_map_body";

// The loop's variables, in order: the index, the count, the strings, the images so far.
const std::vector<std::pair<std::string, tensorflow::DataType>> kLoopVariables = {
    {"i", DT_INT32}, {"n", DT_INT32}, {"image_bytes", DT_STRING}, {"images", DT_FLOAT}};

void declare(tensorflow::FunctionDef* f, const std::string& name,
             const std::vector<std::pair<std::string, tensorflow::DataType>>& outputs) {
  f->mutable_signature()->set_name(name);
  for (const auto& [arg, type] : kLoopVariables) {
    auto* a = f->mutable_signature()->add_input_arg();
    a->set_name(arg);
    a->set_type(type);
  }
  for (const auto& [arg, type] : outputs) {
    auto* a = f->mutable_signature()->add_output_arg();
    a->set_name(arg);
    a->set_type(type);
  }
}

// Inside a function a node's output is "node:<output arg name>:index".
std::string out(const std::string& node, const char* arg) { return node + ":" + arg + ":0"; }

NodeDef* typed(TfGraphDefBuilder& b, const std::string& name, const std::string& op,
               const std::vector<std::string>& inputs, tensorflow::DataType t) {
  NodeDef* n = b.add(name, op, inputs);
  set_type(n, "T", t);
  return n;
}

// i < n
void build_cond(tensorflow::FunctionDef* f) {
  declare(f, kCond, {{"keep_going", DT_BOOL}});
  TfGraphDefBuilder b(f);
  NodeDef* less = typed(b, "Less", "Less", {"i", "n"}, DT_INT32);
  (*f->mutable_ret())["keep_going"] = out(less->name(), "z");
}

// images = concat(images, preprocess(decode_jpeg(image_bytes[i]))); i += 1
void build_body(tensorflow::FunctionDef* f, int64_t height, int64_t width,
                double central_fraction) {
  declare(f, kBody, kLoopVariables);
  TfGraphDefBuilder b(f);
  const std::string zero = out(b.const_int32("zero", {0}, true), "output");

  NodeDef* jpeg = b.add("jpeg", "GatherV2", {"image_bytes", "i", zero});
  set_type(jpeg, "Tparams", DT_STRING);
  set_type(jpeg, "Tindices", DT_INT32);
  set_type(jpeg, "Taxis", DT_INT32);
  set_int(jpeg, "batch_dims", 0);
  NodeDef* decoded = b.add("decode_jpeg", "DecodeJpeg", {out(jpeg->name(), "output")});
  set_int(decoded, "channels", 3);
  set_int(decoded, "ratio", 1);
  set_bool(decoded, "fancy_upscaling", true);
  set_bool(decoded, "try_recover_truncated", false);
  set_float(decoded, "acceptable_fraction", 1.f);
  set_string(decoded, "dct_method", "");
  const std::string pixels = out(decoded->name(), "image");

  // convert_image_dtype: uint8 -> float32 times 1/255.
  NodeDef* as_float = b.add("convert_image/Cast", "Cast", {pixels});
  set_type(as_float, "SrcT", DT_UINT8);
  set_type(as_float, "DstT", DT_FLOAT);
  set_bool(as_float, "Truncate", false);
  const std::string scale = out(b.const_filled("convert_image/y", {}, 1.f / 255.f), "output");
  NodeDef* unit = typed(b, "convert_image", "Mul", {out(as_float->name(), "y"), scale}, DT_FLOAT);

  // central_crop: start = int32((size - size * fraction) / 2) in float64, per dimension (the
  // channels' start is 0), length = size - 2 * start.
  NodeDef* shape = b.add("central_crop/Shape", "Shape", {pixels});
  set_type(shape, "T", DT_UINT8);
  set_type(shape, "out_type", DT_INT32);
  NodeDef* shape_f = b.add("central_crop/Cast", "Cast", {out(shape->name(), "output")});
  set_type(shape_f, "SrcT", DT_INT32);
  set_type(shape_f, "DstT", DT_DOUBLE);
  set_bool(shape_f, "Truncate", false);
  const std::string size_f = out(shape_f->name(), "y");
  NodeDef* kept =
      typed(b, "central_crop/mul", "Mul",
            {size_f, out(b.const_double("central_crop/fraction", central_fraction), "output")},
            DT_DOUBLE);
  NodeDef* margin =
      typed(b, "central_crop/sub", "Sub", {size_f, out(kept->name(), "z")}, DT_DOUBLE);
  NodeDef* half =
      typed(b, "central_crop/truediv", "RealDiv",
            {out(margin->name(), "z"), out(b.const_double("central_crop/two", 2.0), "output")},
            DT_DOUBLE);
  NodeDef* start = b.add("central_crop/start", "Cast", {out(half->name(), "z")});
  set_type(start, "SrcT", DT_DOUBLE);
  set_type(start, "DstT", DT_INT32);
  set_bool(start, "Truncate", false);
  const std::string start_t = out(start->name(), "y");
  NodeDef* both_sides =
      typed(b, "central_crop/mul_1", "Mul",
            {start_t, out(b.const_int32("central_crop/two_int", {2}, true), "output")}, DT_INT32);
  NodeDef* length = typed(b, "central_crop/sub_1", "Sub",
                          {out(shape->name(), "output"), out(both_sides->name(), "z")}, DT_INT32);
  NodeDef* crop = typed(b, "central_crop/Slice", "Slice",
                        {out(unit->name(), "z"), start_t, out(length->name(), "z")}, DT_FLOAT);
  set_type(crop, "Index", DT_INT32);

  // TF1 resize_bilinear (align_corners false, no half-pixel centres) on a batch of one.
  NodeDef* batch = b.add("ExpandDims", "ExpandDims", {out(crop->name(), "output"), zero});
  set_type(batch, "T", DT_FLOAT);
  set_type(batch, "Tdim", DT_INT32);
  const std::string size =
      out(b.const_int32("resize/size", {static_cast<int32_t>(height), static_cast<int32_t>(width)}),
          "output");
  NodeDef* resized = typed(b, "resize/ResizeBilinear", "ResizeBilinear",
                           {out(batch->name(), "output"), size}, DT_FLOAT);
  set_bool(resized, "align_corners", false);
  set_bool(resized, "half_pixel_centers", false);

  // (x - 0.5) * 2
  NodeDef* centred = typed(
      b, "Sub", "Sub",
      {out(resized->name(), "resized_images"), out(b.const_filled("half", {}, 0.5f), "output")},
      DT_FLOAT);
  NodeDef* scaled =
      typed(b, "Mul", "Mul",
            {out(centred->name(), "z"), out(b.const_filled("two", {}, 2.f), "output")}, DT_FLOAT);

  NodeDef* appended =
      typed(b, "append", "ConcatV2", {"images", out(scaled->name(), "z"), zero}, DT_FLOAT);
  set_int(appended, "N", 2);
  set_type(appended, "Tidx", DT_INT32);
  NodeDef* next =
      typed(b, "next", "AddV2", {"i", out(b.const_int32("one", {1}, true), "output")}, DT_INT32);

  auto& ret = *f->mutable_ret();
  ret["i"] = out(next->name(), "z");
  ret["images"] = out(appended->name(), "output");
  for (const char* passed : {"n", "image_bytes"}) {
    NodeDef* same = b.add(std::string(passed) + "_out", "Identity", {passed});
    set_type(same, "T", passed == std::string("n") ? DT_INT32 : DT_STRING);
    ret[passed] = out(same->name(), "output");
  }
}

}  // namespace

ImageBytesInput add_image_bytes_input(TfGraphDefBuilder& graph, int64_t height, int64_t width,
                                      double central_fraction) {
  tensorflow::FunctionDefLibrary* library = graph.graph().mutable_library();
  build_cond(library->add_function());
  build_body(library->add_function(), height, width, central_fraction);

  NodeDef* input = graph.add("image_bytes", "Placeholder");
  set_type(input, "dtype", DT_STRING);
  set_shape(input, "shape", {-1});
  NodeDef* count = graph.add("map/Size", "Size", {input->name()});
  set_type(count, "T", DT_STRING);
  set_type(count, "out_type", DT_INT32);
  const std::string start = graph.const_int32("map/start", {0}, true);
  const std::string none = graph.const_filled("map/empty", {0, height, width, 3}, 0.f);
  NodeDef* loop = graph.add("map/while", "While", {start, count->name(), input->name(), none});
  set_types(loop, "T", {DT_INT32, DT_INT32, DT_STRING, DT_FLOAT});
  (*loop->mutable_attr())["cond"].mutable_func()->set_name(kCond);
  (*loop->mutable_attr())["body"].mutable_func()->set_name(kBody);
  tensorflow::AttrValue::ListValue* shapes =
      (*loop->mutable_attr())["output_shapes"].mutable_list();
  *shapes->add_shape() = shape_proto({});
  *shapes->add_shape() = shape_proto({});
  *shapes->add_shape() = shape_proto({-1});
  *shapes->add_shape() = shape_proto({-1, height, width, 3});
  set_int(loop, "parallel_iterations", 10);
  return ImageBytesInput{input->name(), loop->name() + ":3"};
}

}  // namespace ic
