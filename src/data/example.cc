// tf.Example <-> ImageExample with libprotobuf and our copy of TensorFlow's example.proto.
#include "data/example.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "proto/example.pb.h"

namespace ic {
namespace {

using FeatureMap = google::protobuf::Map<std::string, tensorflow::Feature>;

void put_bytes(FeatureMap& map, const char* key, const std::string& value) {
  if (!value.empty()) map[key].mutable_bytes_list()->add_value(value);
}
void put_int64(FeatureMap& map, const char* key, int64_t value) {
  map[key].mutable_int64_list()->add_value(value);
}
void put_floats(FeatureMap& map, const char* key, const std::vector<float>& values) {
  if (values.empty()) return;
  auto* list = map[key].mutable_float_list();
  list->mutable_value()->Add(values.begin(), values.end());
}

// A feature present with no kind set reads as missing, as TensorFlow's parser does.
const tensorflow::Feature* find(const FeatureMap& map, const char* key) {
  auto it = map.find(key);
  if (it == map.end() || it->second.kind_case() == tensorflow::Feature::KIND_NOT_SET) {
    return nullptr;
  }
  return &it->second;
}

Status wrong_type(const char* key, const char* wanted) {
  return data_loss("tf.Example key ", key, ": expected ", wanted);
}

// A FixedLen scalar: absent keeps *out; present must hold exactly one value of the right type.
Status get_bytes(const FeatureMap& map, const char* key, std::string* out) {
  const tensorflow::Feature* f = find(map, key);
  if (!f) return Status();
  if (!f->has_bytes_list() || f->bytes_list().value_size() != 1) {
    return wrong_type(key, "one bytes value");
  }
  *out = f->bytes_list().value(0);
  return Status();
}
Status get_int64(const FeatureMap& map, const char* key, int64_t* out) {
  const tensorflow::Feature* f = find(map, key);
  if (!f) return Status();
  if (!f->has_int64_list() || f->int64_list().value_size() != 1) {
    return wrong_type(key, "one int64 value");
  }
  *out = f->int64_list().value(0);
  return Status();
}
// VarLen lists: absent is empty.
Status get_floats(const FeatureMap& map, const char* key, std::vector<float>* out) {
  const tensorflow::Feature* f = find(map, key);
  if (!f) return Status();
  if (!f->has_float_list()) return wrong_type(key, "a float list");
  out->assign(f->float_list().value().begin(), f->float_list().value().end());
  return Status();
}
Status get_int64s(const FeatureMap& map, const char* key, std::vector<int64_t>* out) {
  const tensorflow::Feature* f = find(map, key);
  if (!f) return Status();
  if (!f->has_int64_list()) return wrong_type(key, "an int64 list");
  out->assign(f->int64_list().value().begin(), f->int64_list().value().end());
  return Status();
}

}  // namespace

std::string encode_image_example(const ImageExample& e) {
  tensorflow::Example example;
  FeatureMap& map = *example.mutable_features()->mutable_feature();
  if (e.height > 0) put_int64(map, "image/height", e.height);
  if (e.width > 0) put_int64(map, "image/width", e.width);
  put_bytes(map, "image/colorspace", e.colorspace);
  if (e.channels > 0) put_int64(map, "image/channels", e.channels);
  if (e.label >= 0) put_int64(map, "image/class/label", e.label);
  put_bytes(map, "image/class/synset", e.synset);
  put_bytes(map, "image/class/text", e.text);
  put_bytes(map, "image/format", e.format);
  put_bytes(map, "image/filename", e.filename);
  put_bytes(map, "image/encoded", e.encoded);
  put_floats(map, "image/object/bbox/ymin", e.bbox_ymin);
  put_floats(map, "image/object/bbox/xmin", e.bbox_xmin);
  put_floats(map, "image/object/bbox/ymax", e.bbox_ymax);
  put_floats(map, "image/object/bbox/xmax", e.bbox_xmax);
  if (!e.bbox_label.empty()) {
    map["image/object/class/label"].mutable_int64_list()->mutable_value()->Add(e.bbox_label.begin(),
                                                                               e.bbox_label.end());
  }
  // Deterministic: map entries sorted by key, so the same example always gives the same bytes
  // (reproducible shards, byte-identical resumed conversions).
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    example.SerializeToCodedStream(&coded);
  }
  return out;
}

Result<ImageExample> decode_image_example(std::string_view bytes) {
  tensorflow::Example example;
  if (!example.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return data_loss("malformed tf.Example (", bytes.size(), " bytes)");
  }
  const FeatureMap& map = example.features().feature();
  ImageExample e;
  // The parser's defaults for absent keys (the reference input parser's); the converter's constants
  // are not assumed, so a record without them reads as "unknown" (empty / 0).
  e.format = "jpeg";
  e.colorspace.clear();
  e.channels = 0;
  IC_RETURN_IF_ERROR(get_bytes(map, "image/encoded", &e.encoded));
  IC_RETURN_IF_ERROR(get_bytes(map, "image/format", &e.format));
  IC_RETURN_IF_ERROR(get_bytes(map, "image/colorspace", &e.colorspace));
  IC_RETURN_IF_ERROR(get_int64(map, "image/channels", &e.channels));
  IC_RETURN_IF_ERROR(get_int64(map, "image/height", &e.height));
  IC_RETURN_IF_ERROR(get_int64(map, "image/width", &e.width));
  IC_RETURN_IF_ERROR(get_int64(map, "image/class/label", &e.label));
  IC_RETURN_IF_ERROR(get_bytes(map, "image/class/synset", &e.synset));
  IC_RETURN_IF_ERROR(get_bytes(map, "image/class/text", &e.text));
  IC_RETURN_IF_ERROR(get_bytes(map, "image/filename", &e.filename));
  IC_RETURN_IF_ERROR(get_floats(map, "image/object/bbox/ymin", &e.bbox_ymin));
  IC_RETURN_IF_ERROR(get_floats(map, "image/object/bbox/xmin", &e.bbox_xmin));
  IC_RETURN_IF_ERROR(get_floats(map, "image/object/bbox/ymax", &e.bbox_ymax));
  IC_RETURN_IF_ERROR(get_floats(map, "image/object/bbox/xmax", &e.bbox_xmax));
  IC_RETURN_IF_ERROR(get_int64s(map, "image/object/class/label", &e.bbox_label));
  const size_t boxes = e.bbox_ymin.size();
  if (e.bbox_xmin.size() != boxes || e.bbox_ymax.size() != boxes || e.bbox_xmax.size() != boxes) {
    return data_loss("tf.Example image/object/bbox lists differ in length (ymin ", boxes, ", xmin ",
                     e.bbox_xmin.size(), ", ymax ", e.bbox_ymax.size(), ", xmax ",
                     e.bbox_xmax.size(), ")");
  }
  return e;
}

}  // namespace ic
