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

NodeDef* cast(TfGraphDefBuilder& b, const std::string& name, const std::string& x,
              tensorflow::DataType from, tensorflow::DataType to) {
  NodeDef* n = b.add(name, "Cast", {x});
  set_type(n, "SrcT", from);
  set_type(n, "DstT", to);
  set_bool(n, "Truncate", false);
  return n;
}

// TF1 resize_bilinear (align corners false, no half-pixel centres) of one float image [h,w,3]
// to `size` (int32 [2]), as a batch of one: [1, size, 3].
std::string resize_bilinear(TfGraphDefBuilder& b, const std::string& image, const std::string& size,
                            const std::string& zero) {
  NodeDef* batch = b.add("ExpandDims", "ExpandDims", {image, zero});
  set_type(batch, "T", DT_FLOAT);
  set_type(batch, "Tdim", DT_INT32);
  NodeDef* resized = typed(b, "resize/ResizeBilinear", "ResizeBilinear",
                           {out(batch->name(), "output"), size}, DT_FLOAT);
  set_bool(resized, "align_corners", false);
  set_bool(resized, "half_pixel_centers", false);
  return out(resized->name(), "resized_images");
}

// Inception evaluation of the decoded `pixels` (uint8 [h,w,3]): [1, height, width, 3].
std::string inception_eval(TfGraphDefBuilder& b, const std::string& pixels,
                           const PreprocessOptions& eval, const std::string& zero) {
  // convert_image_dtype: uint8 -> float32 times 1/255.
  NodeDef* as_float = cast(b, "convert_image/Cast", pixels, DT_UINT8, DT_FLOAT);
  const std::string scale = out(b.const_filled("convert_image/y", {}, 1.f / 255.f), "output");
  NodeDef* unit = typed(b, "convert_image", "Mul", {out(as_float->name(), "y"), scale}, DT_FLOAT);

  // central_crop: start = int32((size - size * fraction) / 2) in float64, per dimension (the
  // channels' start is 0), length = size - 2 * start.
  NodeDef* shape = b.add("central_crop/Shape", "Shape", {pixels});
  set_type(shape, "T", DT_UINT8);
  set_type(shape, "out_type", DT_INT32);
  NodeDef* shape_f =
      cast(b, "central_crop/Cast", out(shape->name(), "output"), DT_INT32, DT_DOUBLE);
  const std::string size_f = out(shape_f->name(), "y");
  NodeDef* kept = typed(
      b, "central_crop/mul", "Mul",
      {size_f, out(b.const_double("central_crop/fraction", eval.eval_central_fraction), "output")},
      DT_DOUBLE);
  NodeDef* margin =
      typed(b, "central_crop/sub", "Sub", {size_f, out(kept->name(), "z")}, DT_DOUBLE);
  NodeDef* half =
      typed(b, "central_crop/truediv", "RealDiv",
            {out(margin->name(), "z"), out(b.const_double("central_crop/two", 2.0), "output")},
            DT_DOUBLE);
  NodeDef* start = cast(b, "central_crop/start", out(half->name(), "z"), DT_DOUBLE, DT_INT32);
  const std::string start_t = out(start->name(), "y");
  NodeDef* both_sides =
      typed(b, "central_crop/mul_1", "Mul",
            {start_t, out(b.const_int32("central_crop/two_int", {2}, true), "output")}, DT_INT32);
  NodeDef* length = typed(b, "central_crop/sub_1", "Sub",
                          {out(shape->name(), "output"), out(both_sides->name(), "z")}, DT_INT32);
  NodeDef* crop = typed(b, "central_crop/Slice", "Slice",
                        {out(unit->name(), "z"), start_t, out(length->name(), "z")}, DT_FLOAT);
  set_type(crop, "Index", DT_INT32);

  const std::string size = out(b.const_int32("resize/size", {static_cast<int32_t>(eval.height),
                                                             static_cast<int32_t>(eval.width)}),
                               "output");
  const std::string resized = resize_bilinear(b, out(crop->name(), "output"), size, zero);

  // (x - 0.5) * 2
  NodeDef* centred =
      typed(b, "Sub", "Sub", {resized, out(b.const_filled("half", {}, 0.5f), "output")}, DT_FLOAT);
  NodeDef* scaled =
      typed(b, "Mul", "Mul",
            {out(centred->name(), "z"), out(b.const_filled("two", {}, 2.f), "output")}, DT_FLOAT);
  return out(scaled->name(), "z");
}

// VGG evaluation of the decoded `pixels` (uint8 [h,w,3]): [1, height, width, 3]. The new size
// is computed in float32 as data/preprocessing.cc does: side / min(h, w) times each, rounded
// half to even (Round).
std::string vgg_eval(TfGraphDefBuilder& b, const std::string& pixels, const PreprocessOptions& eval,
                     const std::string& zero) {
  NodeDef* as_float = cast(b, "vgg/Cast", pixels, DT_UINT8, DT_FLOAT);
  NodeDef* shape = b.add("vgg/Shape", "Shape", {pixels});
  set_type(shape, "T", DT_UINT8);
  set_type(shape, "out_type", DT_INT32);
  NodeDef* hw =
      typed(b, "vgg/hw", "Slice",
            {out(shape->name(), "output"), out(b.const_int32("vgg/hw_begin", {0}), "output"),
             out(b.const_int32("vgg/hw_size", {2}), "output")},
            DT_INT32);
  set_type(hw, "Index", DT_INT32);
  NodeDef* hw_f = cast(b, "vgg/hw_float", out(hw->name(), "output"), DT_INT32, DT_FLOAT);
  const std::string hw_t = out(hw_f->name(), "y");
  NodeDef* shorter = typed(b, "vgg/shorter", "Min", {hw_t, zero}, DT_FLOAT);
  set_type(shorter, "Tidx", DT_INT32);
  set_bool(shorter, "keep_dims", false);
  const std::string side =
      out(b.const_filled("vgg/side", {}, static_cast<float>(eval.vgg_resize_side_min)), "output");
  NodeDef* scale =
      typed(b, "vgg/scale", "RealDiv", {side, out(shorter->name(), "output")}, DT_FLOAT);
  NodeDef* new_hw_f =
      typed(b, "vgg/new_hw_float", "Mul", {hw_t, out(scale->name(), "z")}, DT_FLOAT);
  NodeDef* rounded = typed(b, "vgg/Round", "Round", {out(new_hw_f->name(), "z")}, DT_FLOAT);
  NodeDef* new_hw = cast(b, "vgg/new_hw", out(rounded->name(), "y"), DT_FLOAT, DT_INT32);
  const std::string new_hw_t = out(new_hw->name(), "y");
  const std::string resized = resize_bilinear(b, out(as_float->name(), "y"), new_hw_t, zero);

  // The central crop: offsets (new - out) / 2, rounded down; a map smaller than the crop fails
  // in Slice, as the C++ preprocessing refuses it.
  const std::string out_hw = out(b.const_int32("vgg/out_hw", {static_cast<int32_t>(eval.height),
                                                              static_cast<int32_t>(eval.width)}),
                                 "output");
  NodeDef* spare = typed(b, "vgg/spare", "Sub", {new_hw_t, out_hw}, DT_INT32);
  NodeDef* offset = typed(
      b, "vgg/offset", "FloorDiv",
      {out(spare->name(), "z"), out(b.const_int32("vgg/two", {2}, true), "output")}, DT_INT32);
  NodeDef* begin =
      typed(b, "vgg/begin", "ConcatV2",
            {out(b.const_int32("vgg/batch_begin", {0}), "output"), out(offset->name(), "z"),
             out(b.const_int32("vgg/channel_begin", {0}), "output"), zero},
            DT_INT32);
  set_int(begin, "N", 3);
  set_type(begin, "Tidx", DT_INT32);
  const std::string crop_size = out(
      b.const_int32("vgg/crop_size",
                    {1, static_cast<int32_t>(eval.height), static_cast<int32_t>(eval.width), 3}),
      "output");
  NodeDef* crop =
      typed(b, "vgg/crop", "Slice", {resized, out(begin->name(), "output"), crop_size}, DT_FLOAT);
  set_type(crop, "Index", DT_INT32);

  // (x / 255 - mean) / 128: the means on the 0-255 scale taken from pixels in [0, 1], the
  // reference's quirk that data/preprocessing.h keeps.
  NodeDef* unit = typed(
      b, "vgg/unit", "Mul",
      {out(crop->name(), "output"), out(b.const_filled("vgg/inv255", {}, 1.f / 255.f), "output")},
      DT_FLOAT);
  NodeDef* centred = typed(
      b, "vgg/centred", "Sub",
      {out(unit->name(), "z"),
       out(b.const_floats("vgg/means", {kVggMeans[0], kVggMeans[1], kVggMeans[2]}), "output")},
      DT_FLOAT);
  NodeDef* scaled = typed(
      b, "vgg/scaled", "Mul",
      {out(centred->name(), "z"), out(b.const_filled("vgg/inv128", {}, 1.f / 128.f), "output")},
      DT_FLOAT);
  return out(scaled->name(), "z");
}

// images = concat(images, preprocess(decode_jpeg(image_bytes[i]))); i += 1
void build_body(tensorflow::FunctionDef* f, const PreprocessOptions& eval) {
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
  const std::string image = eval.kind == PreprocessOptions::Kind::vgg
                                ? vgg_eval(b, pixels, eval, zero)
                                : inception_eval(b, pixels, eval, zero);

  NodeDef* appended = typed(b, "append", "ConcatV2", {"images", image, zero}, DT_FLOAT);
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

ImageBytesInput add_image_bytes_input(TfGraphDefBuilder& graph, const PreprocessOptions& eval) {
  const int64_t height = eval.height, width = eval.width;
  tensorflow::FunctionDefLibrary* library = graph.graph().mutable_library();
  build_cond(library->add_function());
  build_body(library->add_function(), eval);

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
