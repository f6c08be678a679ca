// make_fuzz_seeds OUT_DIR: writes a small seed corpus for every harness, OUT_DIR/<harness>/,
// made by the project's own writers so the fuzzers start from valid inputs:
//   fuzz_tfrecord          two-record TFRecord files (one record a tf.Example), and three-record
//                          ones damaged in the middle (flipped length, cut record, huge length)
//   fuzz_example           serialized tf.Examples (with and without boxes)
//   fuzz_image             JPEGs and a PNG behind every harness prefix (call, scale, crop),
//                          and bombs (60000x60000 headers), a cut JPEG, a short scan
//   fuzz_preprocess        tf.Examples of a JPEG and a PNG, labels 0-7 (every preprocessing)
//   fuzz_safetensors       safetensors files with every dtype and metadata
//   fuzz_int8_export       a safetensors file holding one int8 layer
//   fuzz_json              their JSON headers
//   fuzz_npy               .npy arrays of rank 0, 1 and 3
//   fuzz_event             an event file with a scalar and an eval event
//   fuzz_checkpoint_state  `checkpoint` texts as we and TensorFlow write them
//   fuzz_idx               IDX image and label files, plain and gzipped
//   fuzz_synset_labels     labels files for the harness's three validation images
//   fuzz_input_position    positions of a two-file stream (fresh, mid-file, buffered)
//   fuzz_predict_request   predict bodies (row, columnar, named, float), a classify body
//   fuzz_http_request      HTTP requests: GET, POST with a length, chunked, pipelined,
//                          Expect: 100-continue (the first byte picks the harness's chunk size)
//   fuzz_grpc_predict      gRPC PredictRequests: floats in tensor_content and float_val, image
//                          bytes
//   fuzz_warmup            warm-up files: a classify Predict and a Classify of two tf.Examples,
//                          and one whose second record is a regress_log
//   fuzz_model_config      model config files: two models with a specific policy and
//                          stable/canary labels, latest 2 and all; one with a label outside
//                          its policy
//   fuzz_best_export       --export_best records: accuracy (max) and loss (min)
//   fuzz_sweep_config      sweep configs: a grid with base flags, a list of variants
//   fuzz_gcs_json          Cloud Storage / OAuth bodies: a listing page, object metadata, a
//                          token response, a service-account key (dummy PEM), rewrite and
//                          error responses
#include <google/protobuf/text_format.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "data/example.h"
#include "data/fake_imagenet.h"
#include "data/image_codec.h"
#include "data/input_position.h"
#include "infer/npy.h"
#include "io/checkpoint_dir.h"
#include "io/event_writer.h"
#include "io/safetensors.h"
#include "io/tensor_bundle.h"
#include "io/tfrecord.h"
#include "proto/tensorflow_serving/model_server_config.pb.h"
#include "proto/tensorflow_serving/predict.pb.h"
#include "proto/tensorflow_serving/prediction_log.pb.h"
#include "serve/base64.h"

namespace {

namespace fs = std::filesystem;

ic::Status write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return ic::error(path.string(), ": cannot write");
  return ic::Status();
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

ic::RgbImage picture(int height, int width, int64_t label) {
  return ic::make_fake_image(/*seed=*/7, /*index=*/label, label, /*num_classes=*/10, height, width);
}

ic::ImageExample example_with(const std::string& jpeg, bool boxes) {
  ic::ImageExample e;
  e.encoded = jpeg;
  e.height = 24;
  e.width = 32;
  e.label = 3;
  e.synset = "n01440764";
  e.text = "tench";
  e.filename = "n01440764_10026.JPEG";
  if (boxes) {
    e.bbox_ymin = {0.1f, 0.2f};
    e.bbox_xmin = {0.1f, 0.3f};
    e.bbox_ymax = {0.9f, 0.8f};
    e.bbox_xmax = {0.7f, 1.0f};
    e.bbox_label = {3, 3};
  }
  return e;
}

ic::Status tfrecord_seeds(const fs::path& dir, const std::string& example) {
  IC_ASSIGN_OR_RETURN(ic::TfRecordWriter writer,
                      ic::TfRecordWriter::create((dir / "two").string()));
  IC_RETURN_IF_ERROR(writer.write("first record"));
  IC_RETURN_IF_ERROR(writer.write(example));
  IC_RETURN_IF_ERROR(writer.close());
  // A bad data CRC in the first record: the reader skips it and reads the second.
  std::string damaged = ic::frame_tfrecord("corrupt") + ic::frame_tfrecord("");
  damaged[13] ^= 1;
  IC_RETURN_IF_ERROR(write_bytes(dir / "damaged", damaged));
  // Damaged framing in the middle of three records, each of which resync() reads past to the
  // third: a flipped length, a record cut short, a CRC-valid length claiming 2^33 bytes.
  const std::string first = ic::frame_tfrecord("first record"),
                    middle = ic::frame_tfrecord(example), last = ic::frame_tfrecord("last record");
  std::string flipped = middle;
  flipped[0] ^= 1;
  IC_RETURN_IF_ERROR(write_bytes(dir / "flipped-length", first + flipped + last));
  IC_RETURN_IF_ERROR(
      write_bytes(dir / "cut-record", first + middle.substr(0, middle.size() / 2) + last));
  std::string huge = ic::frame_tfrecord("");
  huge[4] = 0x02;
  const uint32_t crc = ic::mask_crc32c(ic::crc32c(huge.data(), 8));
  for (int i = 0; i < 4; ++i) huge[8 + i] = static_cast<char>((crc >> (8 * i)) & 0xffu);
  return write_bytes(dir / "huge-length", first + huge.substr(0, 12) + middle.substr(12) + last);
}

// Hostile variants of a JPEG and a PNG: decompression bombs (headers claiming 60000x60000, the
// PNG's with a valid CRC), a JPEG cut in its scan data, and one whose frame header claims more
// rows than its scan holds (libjpeg fills the rest with grey; the decoders must refuse both).
std::vector<std::string> damaged_images(const std::string& jpeg, const std::string& png) {
  auto jpeg_claiming = [&](int height, int width) {
    std::string bytes = jpeg;
    const size_t sof = bytes.find("\xFF\xC0");
    if (sof == std::string::npos || sof + 9 > bytes.size()) return bytes;
    bytes[sof + 5] = static_cast<char>(height >> 8);
    bytes[sof + 6] = static_cast<char>(height & 0xff);
    bytes[sof + 7] = static_cast<char>(width >> 8);
    bytes[sof + 8] = static_cast<char>(width & 0xff);
    return bytes;
  };
  std::string png_bomb = png;
  auto put_be32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) png_bomb[at + i] = static_cast<char>(v >> (24 - 8 * i));
  };
  put_be32(16, 60000);
  put_be32(20, 60000);
  // The CRC over "IHDR" and its 13 bytes, fixed as a real bomb has it.
  put_be32(29, static_cast<uint32_t>(
                   crc32(0, reinterpret_cast<const Bytef*>(png_bomb.data() + 12), 17)));
  return {jpeg_claiming(60000, 60000), png_bomb, jpeg.substr(0, jpeg.size() * 2 / 3),
          jpeg_claiming(240, 320)};
}

ic::Status image_seeds(const fs::path& dir, const std::vector<std::string>& images) {
  // Prefix: byte 0 = scale | call << 2, then y, x, height, width as little-endian int16.
  struct Prefix {
    uint8_t control;
    int16_t y, x, height, width;
  };
  const Prefix prefixes[] = {{0, 0, 0, 0, 0},      {1, 0, 0, 0, 0},    {4, 4, 5, 12, 20},
                             {5, 2, 3, 8, 9},      {6, -4, 30, 40, 8}, {8, 0, 0, 0, 0},
                             {8 | 16, 0, 0, 0, 0}, {12, 0, 0, 0, 0}};
  int n = 0;
  for (const std::string& image : images) {
    for (const Prefix& p : prefixes) {
      std::string bytes(1, static_cast<char>(p.control));
      for (const int16_t v : {p.y, p.x, p.height, p.width}) {
        bytes += static_cast<char>(static_cast<uint16_t>(v) & 0xff);
        bytes += static_cast<char>(static_cast<uint16_t>(v) >> 8);
      }
      IC_RETURN_IF_ERROR(write_bytes(dir / ("image_" + std::to_string(n++)), bytes + image));
    }
  }
  return ic::Status();
}

// An int8 export's layer (runtime/int8_tensors.h): I8 HWIO weights of 3 output channels, their
// scales, the input scale.
ic::Status int8_export_seeds(const fs::path& dir) {
  const int8_t q[] = {127, -5, 0, -127, 64, 1};
  const float weight_scales[] = {0.01f, 0.5f, 2.0f};
  const float input_scale = 0.05f;
  const std::string layer = "InceptionV3/Conv2d_2a_3x3";
  const std::vector<ic::TensorView> tensors = {
      {layer + "/weights", ic::DType::s8, ic::Shape({1, 1, 2, 3}), q},
      {layer + "/int8_weight_scales", ic::DType::f32, ic::Shape({3}), weight_scales},
      {layer + "/int8_input_scale", ic::DType::f32, ic::Shape({1}), &input_scale}};
  return ic::write_safetensors(
      (dir / "one_layer").string(),
      {{"precision", "int8"}, {"calibration_images", "512"}, {"calibration_data", "d/train-*"}},
      tensors);
}

ic::Status safetensors_seeds(const fs::path& dir, const fs::path& json_dir) {
  const std::vector<float> weights = {1.5f, -2.0f, 0.25f, 8.0f, 0.0f, -0.5f};
  const int64_t step = 1200;
  const int32_t counts[] = {1, 2, 3};
  const uint16_t bf16[] = {0x3f80, 0xc000};
  const std::vector<ic::TensorView> tensors = {
      {"InceptionV3/Conv2d_1a_3x3/weights", ic::DType::f32, ic::Shape({1, 2, 1, 3}),
       weights.data()},
      {"global_step", ic::DType::i64, ic::Shape(std::vector<int64_t>{}), &step},
      {"counts", ic::DType::i32, ic::Shape({3}), counts},
      {"half", ic::DType::bf16, ic::Shape({2}), bf16},
      {"empty", ic::DType::f32, ic::Shape({0, 4}), nullptr}};
  const fs::path with_metadata = dir / "checkpoint_like";
  IC_RETURN_IF_ERROR(ic::write_safetensors(
      with_metadata.string(), {{"model", "inception_v3"}, {"num_classes", "1001"}}, tensors));
  IC_RETURN_IF_ERROR(ic::write_safetensors((dir / "one_tensor").string(), {}, {tensors[0]}));
  IC_RETURN_IF_ERROR(ic::write_safetensors((dir / "nothing").string(), {}, {}));
  // The JSON harness gets the headers (8-byte length, then the JSON).
  int n = 0;
  for (const char* name : {"checkpoint_like", "one_tensor"}) {
    const std::string bytes = read_bytes(dir / name);
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<uint8_t>(bytes[i]);
    IC_RETURN_IF_ERROR(
        write_bytes(json_dir / ("header_" + std::to_string(n++)), bytes.substr(8, length)));
  }
  return write_bytes(json_dir / "escapes",
                     R"({"a":[1,-2,3.5e-3,true,false,null],"\u00e9\ud83d\ude00\n":"x\"\\\/"})");
}

ic::Status npy_seeds(const fs::path& dir) {
  IC_RETURN_IF_ERROR(ic::write_npy((dir / "matrix").string(), {{2, 1, 3}, {1, 2, 3, 4, 5, 6}}));
  IC_RETURN_IF_ERROR(ic::write_npy((dir / "vector").string(), {{4}, {0.5f, 1, 2, 3}}));
  return ic::write_npy((dir / "scalar").string(), {{}, {42}});
}

ic::Status event_seeds(const fs::path& dir) {
  const fs::path scratch = dir / "writer";
  {
    IC_ASSIGN_OR_RETURN(auto writer, ic::EventWriter::create(scratch.string()));
    IC_RETURN_IF_ERROR(writer->add_scalar("loss", 6.5, 100));
    IC_RETURN_IF_ERROR(writer->add_scalars({{"accuracy", 0.25}, {"global_step", 100}}, 100));
    IC_RETURN_IF_ERROR(writer->flush());
  }
  int n = 0;
  for (const auto& entry : fs::directory_iterator(scratch)) {
    fs::rename(entry.path(), dir / ("events_" + std::to_string(n++)));
  }
  fs::remove(scratch);
  return ic::Status();
}

ic::Status checkpoint_state_seeds(const fs::path& dir) {
  ic::CheckpointState state;
  state.model_checkpoint_path = "model.ckpt-2400";
  state.all_model_checkpoint_paths = {"model.ckpt-1200", "model.ckpt-2400"};
  IC_RETURN_IF_ERROR(write_bytes(dir / "ours", ic::checkpoint_state_text(state)));
  return write_bytes(dir / "tensorflow",
                     "model_checkpoint_path: \"/tmp/m/model.ckpt-5\"\n"
                     "all_model_checkpoint_paths: '/tmp/m/model.ckpt-5'\n"
                     "all_model_checkpoint_timestamps: 1716200000.5\n"
                     "last_preserved_timestamp: 1716190000.25\n"
                     "# a comment\n"
                     "all_model_checkpoint_paths: \"a\\\"b\\\\c\\101\\x41\\n\"\n");
}

ic::Status write_gzip(const fs::path& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  if (f == nullptr) return ic::error(path.string(), ": cannot create");
  const int wrote = gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  if (gzclose(f) != Z_OK || wrote != static_cast<int>(bytes.size())) {
    return ic::error(path.string(), ": cannot write");
  }
  return ic::Status();
}

ic::Status idx_seeds(const fs::path& dir) {
  auto u32 = [](uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                       static_cast<char>(v >> 8), static_cast<char>(v)};
  };
  std::string images = u32(0x803) + u32(2) + u32(3) + u32(4);
  for (int i = 0; i < 2 * 3 * 4; ++i) images += static_cast<char>(i * 10);
  const std::string labels = u32(0x801) + u32(3) + std::string("\x01\x09\x00", 3);
  IC_RETURN_IF_ERROR(write_bytes(dir / "images", images));
  IC_RETURN_IF_ERROR(write_bytes(dir / "labels", labels));
  IC_RETURN_IF_ERROR(write_gzip(dir / "images_gz", images));
  return write_gzip(dir / "labels_gz", labels);
}

// fuzz_tensor_bundle's input: the .index's length (4 bytes, little-endian), the .index, the data.
ic::Status bundle_seeds(const fs::path& dir) {
  const std::vector<float> weights = {1.5f, -2.0f, 0.25f, 8.0f, 0.0f, -0.5f};
  const int64_t step = 1200;
  const uint16_t bf16[] = {0x3f80, 0xc000};
  const std::vector<ic::TensorView> tensors = {
      {"InceptionV3/Conv2d_1a_3x3/weights", ic::DType::f32, ic::Shape({1, 2, 1, 3}),
       weights.data()},
      {"global_step", ic::DType::i64, ic::Shape(std::vector<int64_t>{}), &step},
      {"half", ic::DType::bf16, ic::Shape({2}), bf16}};
  int n = 0;
  for (const auto& metadata : {std::map<std::string, std::string>{{"model", "inception_v3"}},
                               std::map<std::string, std::string>{}}) {
    const fs::path prefix = dir / ("bundle.tmp" + std::to_string(n));
    IC_RETURN_IF_ERROR(ic::write_tensor_bundle(prefix.string(), metadata, tensors));
    const std::string index = read_bytes(prefix.string() + ".index");
    const std::string data = read_bytes(prefix.string() + ".data-00000-of-00001");
    std::string bytes(4, '\0');
    for (int i = 0; i < 4; ++i) bytes[i] = static_cast<char>((index.size() >> (8 * i)) & 0xff);
    IC_RETURN_IF_ERROR(write_bytes(dir / ("bundle_" + std::to_string(n++)), bytes + index + data));
    fs::remove(prefix.string() + ".index");
    fs::remove(prefix.string() + ".data-00000-of-00001");
  }
  return ic::Status();
}

ic::Status synset_label_seeds(const fs::path& dir) {
  IC_RETURN_IF_ERROR(write_bytes(dir / "three", "n01440764\nn01443537\nn01440764\n"));
  return write_bytes(dir / "crlf", "class_0_tshirt\r\n\r\nclass_9_ankle_boot  \r\nclass_2\r\n");
}

// Positions over fuzz_input_position's two files of records "a", "bb", "ccc" (each record 16
// bytes of framing plus its data: offsets 0, 17, 35).
ic::Status input_position_seeds(const fs::path& dir) {
  ic::InputPosition p;
  p.seed = 5;
  p.cycle_length = 2;
  p.shuffle_buffer = 3;
  p.batch_size = 2;
  p.file_names = {"train-0", "train-1"};
  p.stream.shuffle_rng = {1, 2, 3, 4};
  p.stream.order_pos = 2;
  IC_RETURN_IF_ERROR(write_bytes(dir / "fresh", ic::format_input_position(p)));
  p.stream_index = 4;
  p.stream.epoch = 1;
  p.stream.open_files = {{1, 17, 1}, {0, 35, 2}};
  p.stream.slot_pos = 1;
  p.stream.buffer = {{0, 0}, {1, 0}, {0, 17}};
  return write_bytes(dir / "buffered", ic::format_input_position(p));
}

// serve's request bodies: row and columnar predict, named inputs, classify with top_k, a float
// instance of the harness's 8x8 input.
ic::Status predict_request_seeds(const fs::path& dir, const std::string& jpeg,
                                 const std::string& png) {
  const std::string b64_jpeg = ic::base64_encode(jpeg), b64_png = ic::base64_encode(png);
  std::string pixels = "[";
  for (int y = 0; y < 8; ++y) {
    pixels += y ? ",[" : "[";
    for (int x = 0; x < 8; ++x) pixels += std::string(x ? "," : "") + "[0.5,-0.25,1]";
    pixels += "]";
  }
  pixels += "]";
  IC_RETURN_IF_ERROR(
      write_bytes(dir / "row", "{\"instances\": [{\"b64\": \"" + b64_jpeg + "\"}]}"));
  IC_RETURN_IF_ERROR(write_bytes(dir / "columnar",
                                 "{\"inputs\": {\"images\": [{\"b64\": \"" + b64_png + "\"}]}}"));
  IC_RETURN_IF_ERROR(write_bytes(dir / "classify", "{\"examples\": [{\"images\": {\"b64\": \"" +
                                                       b64_png + "\"}}], \"top_k\": 3}"));
  return write_bytes(dir / "floats", "{\"instances\": [" + pixels + "]}");
}

// serve's gRPC PredictRequests: the harness's 8x8 float input in tensor_content and in
// float_val, and encoded images for the classify signature.
ic::Status grpc_predict_seeds(const fs::path& dir, const std::string& jpeg,
                              const std::string& png) {
  auto float_request = [](bool tensor_content) {
    tensorflow::serving::PredictRequest request;
    request.mutable_model_spec()->set_name("inception_v3");
    tensorflow::TensorProto& tensor = (*request.mutable_inputs())["images"];
    tensor.set_dtype(tensorflow::DT_FLOAT);
    for (int64_t d : {1, 8, 8, 3}) tensor.mutable_tensor_shape()->add_dim()->set_size(d);
    std::vector<float> values(8 * 8 * 3);
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 9) / 4.f - 1.f;
    if (tensor_content) {
      tensor.set_tensor_content(
          std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
    } else {
      for (float v : values) tensor.add_float_val(v);
    }
    return request.SerializeAsString();
  };
  tensorflow::serving::PredictRequest encoded;
  encoded.mutable_model_spec()->set_name("inception_v3");
  encoded.mutable_model_spec()->set_signature_name("classify");
  encoded.add_output_filter("probabilities");
  tensorflow::TensorProto& bytes = (*encoded.mutable_inputs())["image_bytes"];
  bytes.set_dtype(tensorflow::DT_STRING);
  bytes.mutable_tensor_shape()->add_dim()->set_size(2);
  bytes.add_string_val(jpeg);
  bytes.add_string_val(png);
  IC_RETURN_IF_ERROR(write_bytes(dir / "tensor_content", float_request(true)));
  IC_RETURN_IF_ERROR(write_bytes(dir / "float_val", float_request(false)));
  return write_bytes(dir / "image_bytes", encoded.SerializeAsString());
}

// serve's --model_config_file: ModelServerConfigs in protobuf text format, as TextFormat
// prints them.
ic::Status model_config_seeds(const fs::path& dir) {
  namespace tfs = tensorflow::serving;
  tfs::ModelServerConfig config;
  tfs::ModelConfig& flowers = *config.mutable_model_config_list()->add_config();
  flowers.set_name("flowers");
  flowers.set_base_path("/models/flowers");
  flowers.set_model_platform("tensorflow");
  flowers.mutable_model_version_policy()->mutable_specific()->add_versions(1);
  flowers.mutable_model_version_policy()->mutable_specific()->add_versions(2);
  (*flowers.mutable_version_labels())["stable"] = 1;
  (*flowers.mutable_version_labels())["canary"] = 2;
  tfs::ModelConfig& mnist = *config.mutable_model_config_list()->add_config();
  mnist.set_name("mnist");
  mnist.set_base_path("gs://bucket/mnist");
  mnist.mutable_model_version_policy()->mutable_latest()->set_num_versions(2);
  tfs::ModelConfig& every = *config.mutable_model_config_list()->add_config();
  every.set_name("every");
  every.set_base_path("/models/every");
  every.mutable_model_version_policy()->mutable_all();
  std::string text;
  if (!google::protobuf::TextFormat::PrintToString(config, &text))
    return ic::error("cannot print a model config");
  IC_RETURN_IF_ERROR(write_bytes(dir / "three_models", text));
  (*config.mutable_model_config_list()->mutable_config(0)->mutable_version_labels())["beta"] = 7;
  if (!google::protobuf::TextFormat::PrintToString(config, &text))
    return ic::error("cannot print a model config");
  return write_bytes(dir / "label_outside_policy", text);
}

// The trainers' --export_best records, as best_export_record_json writes them.
ic::Status best_export_seeds(const fs::path& dir) {
  IC_RETURN_IF_ERROR(write_bytes(dir / "accuracy",
                                 "{\"metric\": \"accuracy\", \"mode\": \"max\", \"value\": "
                                 "0.30000000000000004, \"global_step\": 1200, \"checkpoint\": "
                                 "\"model.ckpt-1200\"}\n"));
  return write_bytes(dir / "loss",
                     "{\"metric\": \"loss\", \"mode\": \"min\", \"value\": 2.5e-3, "
                     "\"global_step\": 7, \"checkpoint\": \"model.ckpt-7.safetensors\"}\n");
}

// The sweep program's configs: a grid with base flags, and a list of variants.
ic::Status sweep_config_seeds(const fs::path& dir) {
  IC_RETURN_IF_ERROR(write_bytes(
      dir / "grid",
      R"({"trainer": "inception_v3", "flags": {"use_data": "fake", "train_batch_size": 8},
 "grid": {"learning_rate": [0.1, 0.01], "depth_multiplier": [0.5, 1.0]},
 "metric": "loss", "mode": "min", "budget": {"train_steps": 200}})"));
  return write_bytes(dir / "variants",
                     R"({"trainer": "resnet50", "variants": [{"label_smoothing": 0.1},
 {"optimizer": "momentum", "use_tpu": false}], "budget": {"train_steps": 1}})");
}

// serve's warm-up files (tf_serving_warmup_requests): TFRecords of PredictionLogs.
ic::Status warmup_seeds(const fs::path& dir, const std::string& jpeg, const std::string& png) {
  tensorflow::serving::PredictionLog predict;
  tensorflow::serving::PredictRequest* request = predict.mutable_predict_log()->mutable_request();
  request->mutable_model_spec()->set_name("inception_v3");
  request->mutable_model_spec()->set_signature_name("classify");
  tensorflow::TensorProto& bytes = (*request->mutable_inputs())["image_bytes"];
  bytes.set_dtype(tensorflow::DT_STRING);
  bytes.mutable_tensor_shape()->add_dim()->set_size(1);
  bytes.add_string_val(jpeg);
  tensorflow::serving::PredictionLog classify;
  tensorflow::serving::Input* input =
      classify.mutable_classify_log()->mutable_request()->mutable_input();
  for (const std::string* image : {&jpeg, &png}) {
    (*input->mutable_example_list()
          ->add_examples()
          ->mutable_features()
          ->mutable_feature())["image/encoded"]
        .mutable_bytes_list()
        ->add_value(*image);
  }
  tensorflow::serving::PredictionLog regress;
  regress.mutable_regress_log();
  const std::string predict_record = ic::frame_tfrecord(predict.SerializeAsString());
  IC_RETURN_IF_ERROR(
      write_bytes(dir / "predict_and_classify",
                  predict_record + ic::frame_tfrecord(classify.SerializeAsString())));
  return write_bytes(dir / "regress",
                     predict_record + ic::frame_tfrecord(regress.SerializeAsString()));
}

// Bodies as Cloud Storage's JSON API, an OAuth token endpoint and the metadata server send
// them, and a service-account key file whose PEM is a dummy (the parser does not read it).
ic::Status gcs_json_seeds(const fs::path& dir) {
  const std::map<std::string, std::string> bodies = {
      {"listing_page",
       R"({"kind":"storage#objects","nextPageToken":"Cgxtb2RlbC9ldmVudHM=",)"
       R"("prefixes":["model/eval/","model/export/"],"items":[)"
       R"({"kind":"storage#object","id":"bkt/model/checkpoint/1700000000123456",)"
       R"("name":"model/checkpoint","bucket":"bkt","generation":"1700000000123456",)"
       R"("metageneration":"1","contentType":"application/octet-stream",)"
       R"("size":"187","md5Hash":"1B2M2Y8AsgTpgAmY7PhCfg==","crc32c":"AAAAAA==",)"
       R"("timeCreated":"2026-11-30T12:00:00.000Z","updated":"2026-11-30T12:00:00.000Z"},)"
       R"({"kind":"storage#object","name":"model/model.ckpt-1000.index","size":"5321"}]})"},
      {"listing_last_page", R"({"kind":"storage#objects","items":[{"name":"a"}]})"},
      {"object_metadata",
       R"({"kind":"storage#object","id":"bkt/train-00000-of-01024/1700000000000001",)"
       R"("selfLink":"https://www.googleapis.com/storage/v1/b/bkt/o/train-00000-of-01024",)"
       R"("name":"train-00000-of-01024","bucket":"bkt","generation":"1700000000000001",)"
       R"("metageneration":"1","size":"146472281","storageClass":"STANDARD"})"},
      {"object_metadata_numbers", R"({"size":18446744073709551615,"generation":42})"},
      {"token_response",
       R"({"access_token":"ya29.dummy-token","expires_in":3599,"token_type":"Bearer"})"},
      {"token_response_string_expiry", R"({"access_token":"t","expires_in":"3600"})"},
      {"service_account_key",
       R"({"type":"service_account","project_id":"p","private_key_id":"0123abcd",)"
       R"("private_key":"-----BEGIN PRIVATE KEY-----
MIIBVAIBADANBgkqhkiG9w0BAQEFAASC
)"
       R"(-----END PRIVATE KEY-----
","client_email":"trainer@p.iam.gserviceaccount.com",)"
       R"("client_id":"1","token_uri":"https://oauth2.googleapis.com/token"})"},
      {"rewrite_in_progress",
       R"({"kind":"storage#rewriteResponse","totalBytesRewritten":"1048576",)"
       R"("objectSize":"10485760","done":false,"rewriteToken":"CiRkZW1vLXJld3JpdGU="})"},
      {"rewrite_done", R"({"kind":"storage#rewriteResponse","done":true,"resource":{"name":"b"}})"},
      {"error_response",
       R"({"error":{"code":403,"message":"trainer@p does not have storage.objects.get access",)"
       R"("errors":[{"message":"denied","domain":"global","reason":"forbidden"}]}})"},
      {"decimal", "1700000000123456"},
      {"upload_range", "bytes=0-262143"},
  };
  for (const auto& [name, body] : bodies) IC_RETURN_IF_ERROR(write_bytes(dir / name, body));
  return ic::Status();
}

ic::Status http_request_seeds(const fs::path& dir) {
  const std::map<std::string, std::string> requests = {
      {"get", "\x07GET /v1/models/inception_v3 HTTP/1.1\r\nHost: localhost:8501\r\n\r\n"},
      {"post",
       "\x10POST /v1/models/m:predict HTTP/1.1\r\nHost: a\r\nContent-Type: "
       "application/json\r\nContent-Length: 16\r\n\r\n{\"instances\": []}"},
      {"chunked",
       "\x03POST /p HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
       "4;x=y\r\nabcd\r\n0\r\nT: v\r\n\r\n"},
      {"pipelined", "\x20GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.0\r\n\r\n"},
      {"expect",
       "\x01PUT /x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: "
       "2\r\nConnection: close\r\n\r\nok"},
  };
  for (const auto& [name, bytes] : requests) IC_RETURN_IF_ERROR(write_bytes(dir / name, bytes));
  return ic::Status();
}

ic::Status make_seeds(const fs::path& out) {
  for (const char* harness :
       {"fuzz_tfrecord",       "fuzz_example",          "fuzz_image",    "fuzz_preprocess",
        "fuzz_safetensors",    "fuzz_tensor_bundle",    "fuzz_json",     "fuzz_npy",
        "fuzz_event",          "fuzz_checkpoint_state", "fuzz_idx",      "fuzz_synset_labels",
        "fuzz_input_position", "fuzz_predict_request",  "fuzz_gcs_json", "fuzz_int8_export",
        "fuzz_http_request",   "fuzz_grpc_predict",     "fuzz_warmup",   "fuzz_model_config",
        "fuzz_best_export",    "fuzz_sweep_config"}) {
    fs::create_directories(out / harness);
  }
  IC_ASSIGN_OR_RETURN(const std::string jpeg, ic::encode_jpeg(picture(24, 32, 3), 90));
  IC_ASSIGN_OR_RETURN(const std::string small_jpeg, ic::encode_jpeg(picture(9, 7, 5), 50));
  IC_ASSIGN_OR_RETURN(const std::string png, ic::encode_png(picture(6, 5, 1)));
  const std::string example = ic::encode_image_example(example_with(jpeg, true));

  IC_RETURN_IF_ERROR(tfrecord_seeds(out / "fuzz_tfrecord", example));
  IC_RETURN_IF_ERROR(write_bytes(out / "fuzz_example" / "boxes", example));
  IC_RETURN_IF_ERROR(write_bytes(out / "fuzz_example" / "plain",
                                 ic::encode_image_example(example_with(small_jpeg, false))));
  std::vector<std::string> images = {jpeg, small_jpeg, png};
  for (std::string& damaged : damaged_images(jpeg, png)) images.push_back(std::move(damaged));
  IC_RETURN_IF_ERROR(image_seeds(out / "fuzz_image", images));
  for (int64_t label = 0; label < 8; ++label) {
    ic::ImageExample e = example_with(label % 2 ? png : jpeg, label < 4);
    e.label = label;
    IC_RETURN_IF_ERROR(write_bytes(out / "fuzz_preprocess" / ("example_" + std::to_string(label)),
                                   ic::encode_image_example(e)));
  }
  IC_RETURN_IF_ERROR(safetensors_seeds(out / "fuzz_safetensors", out / "fuzz_json"));
  IC_RETURN_IF_ERROR(int8_export_seeds(out / "fuzz_int8_export"));
  IC_RETURN_IF_ERROR(bundle_seeds(out / "fuzz_tensor_bundle"));
  IC_RETURN_IF_ERROR(npy_seeds(out / "fuzz_npy"));
  IC_RETURN_IF_ERROR(event_seeds(out / "fuzz_event"));
  IC_RETURN_IF_ERROR(checkpoint_state_seeds(out / "fuzz_checkpoint_state"));
  IC_RETURN_IF_ERROR(idx_seeds(out / "fuzz_idx"));
  IC_RETURN_IF_ERROR(input_position_seeds(out / "fuzz_input_position"));
  IC_RETURN_IF_ERROR(predict_request_seeds(out / "fuzz_predict_request", jpeg, png));
  IC_RETURN_IF_ERROR(gcs_json_seeds(out / "fuzz_gcs_json"));
  IC_RETURN_IF_ERROR(http_request_seeds(out / "fuzz_http_request"));
  IC_RETURN_IF_ERROR(grpc_predict_seeds(out / "fuzz_grpc_predict", jpeg, png));
  IC_RETURN_IF_ERROR(warmup_seeds(out / "fuzz_warmup", jpeg, png));
  IC_RETURN_IF_ERROR(model_config_seeds(out / "fuzz_model_config"));
  IC_RETURN_IF_ERROR(best_export_seeds(out / "fuzz_best_export"));
  IC_RETURN_IF_ERROR(sweep_config_seeds(out / "fuzz_sweep_config"));
  return synset_label_seeds(out / "fuzz_synset_labels");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const ic::Status status = make_seeds(argv[1]);
  if (!status.ok()) {
    std::fprintf(stderr, "make_fuzz_seeds: %s\n", status.message().c_str());
    return 1;
  }
  return 0;
}
