#include "data/example.h"

#include <gtest/gtest.h>

#include <string>

#include "proto/example.pb.h"

namespace ic {
namespace {

ImageExample full_example() {
  ImageExample e;
  e.encoded = std::string("\xff\xd8\xff\x00jpegbytes\0with-nul", 22);
  e.height = 375;
  e.width = 500;
  e.label = 42;
  e.synset = "n02323233";
  e.text = "some text";
  e.filename = "n02323233_1.JPEG";
  e.bbox_ymin = {0.1f, 0.2f};
  e.bbox_xmin = {0.0f, 0.25f};
  e.bbox_ymax = {0.9f, 1.0f};
  e.bbox_xmax = {0.5f, 0.75f};
  e.bbox_label = {42, 42};
  return e;
}

void expect_same(const ImageExample& a, const ImageExample& b) {
  EXPECT_EQ(a.encoded, b.encoded);
  EXPECT_EQ(a.format, b.format);
  EXPECT_EQ(a.colorspace, b.colorspace);
  EXPECT_EQ(a.channels, b.channels);
  EXPECT_EQ(a.height, b.height);
  EXPECT_EQ(a.width, b.width);
  EXPECT_EQ(a.label, b.label);
  EXPECT_EQ(a.synset, b.synset);
  EXPECT_EQ(a.text, b.text);
  EXPECT_EQ(a.filename, b.filename);
  EXPECT_EQ(a.bbox_ymin, b.bbox_ymin);
  EXPECT_EQ(a.bbox_xmin, b.bbox_xmin);
  EXPECT_EQ(a.bbox_ymax, b.bbox_ymax);
  EXPECT_EQ(a.bbox_xmax, b.bbox_xmax);
  EXPECT_EQ(a.bbox_label, b.bbox_label);
}

TEST(ImageExample, RoundTrip) {
  const ImageExample e = full_example();
  auto back = decode_image_example(encode_image_example(e));
  ASSERT_TRUE(back.ok()) << back.status().message();
  expect_same(*back, e);
}

// The converter's records carry exactly the reference converter's keys with their types.
TEST(ImageExample, EncodesTensorFlowKeysAndTypes) {
  ImageExample e;
  e.encoded = "JPEG";
  e.height = 2;
  e.width = 3;
  e.label = 1;
  e.synset = "n01440764";
  e.filename = "a.JPEG";
  tensorflow::Example proto;
  ASSERT_TRUE(proto.ParseFromString(encode_image_example(e)));
  const auto& f = proto.features().feature();
  EXPECT_EQ(f.size(), 9u);
  EXPECT_EQ(f.at("image/height").int64_list().value(0), 2);
  EXPECT_EQ(f.at("image/width").int64_list().value(0), 3);
  EXPECT_EQ(f.at("image/colorspace").bytes_list().value(0), "RGB");
  EXPECT_EQ(f.at("image/channels").int64_list().value(0), 3);
  EXPECT_EQ(f.at("image/class/label").int64_list().value(0), 1);
  EXPECT_EQ(f.at("image/class/synset").bytes_list().value(0), "n01440764");
  EXPECT_EQ(f.at("image/format").bytes_list().value(0), "JPEG");
  EXPECT_EQ(f.at("image/filename").bytes_list().value(0), "a.JPEG");
  EXPECT_EQ(f.at("image/encoded").bytes_list().value(0), "JPEG");
  EXPECT_EQ(f.count("image/class/text"), 0u);
  EXPECT_EQ(f.count("image/object/bbox/xmin"), 0u);
}

TEST(ImageExample, MissingKeysTakeParserDefaults) {
  tensorflow::Example proto;
  proto.mutable_features();
  auto e = decode_image_example(proto.SerializeAsString());
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->encoded, "");
  EXPECT_EQ(e->format, "jpeg");
  EXPECT_EQ(e->label, -1);
  EXPECT_EQ(e->text, "");
  EXPECT_EQ(e->height, 0);
  EXPECT_EQ(e->channels, 0);
  EXPECT_TRUE(e->bbox_ymin.empty());
  EXPECT_TRUE(e->bbox_label.empty());
  // A completely empty message is a valid Example with no features.
  auto empty = decode_image_example("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->label, -1);
}

TEST(ImageExample, EmptyValuesAndListsSurvive) {
  tensorflow::Example proto;
  auto& f = *proto.mutable_features()->mutable_feature();
  f["image/encoded"].mutable_bytes_list()->add_value("");
  f["image/class/text"].mutable_bytes_list()->add_value("");
  f["image/object/bbox/xmin"].mutable_float_list();  // present, zero values
  f["image/object/bbox/ymin"].mutable_float_list();
  f["image/object/bbox/xmax"].mutable_float_list();
  f["image/object/bbox/ymax"].mutable_float_list();
  f["image/object/class/label"].mutable_int64_list();
  f["image/class/label"].mutable_int64_list()->add_value(0);
  f["image/filename"];  // a Feature with no kind reads as missing
  auto e = decode_image_example(proto.SerializeAsString());
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->encoded, "");
  EXPECT_EQ(e->label, 0);
  EXPECT_TRUE(e->bbox_xmin.empty());
  EXPECT_EQ(e->filename, "");

  ImageExample none;
  none.format.clear();
  none.colorspace.clear();
  none.channels = 0;
  tensorflow::Example encoded;
  ASSERT_TRUE(encoded.ParseFromString(encode_image_example(none)));
  EXPECT_EQ(encoded.features().feature_size(), 0);
}

// Example{features{feature{"image/class/label": int64_list{7}}}}, written out by hand from the
// protobuf wire format, once packed (proto3) and once unpacked (proto2 writers).
TEST(ImageExample, DecodesHandWrittenWireBytes) {
  const std::string key = "image/class/label";
  auto build = [&](const std::string& int64_list) {
    const std::string feature = std::string("\x1a") + char(int64_list.size()) + int64_list;
    const std::string entry =
        std::string("\x0a") + char(key.size()) + key + "\x12" + char(feature.size()) + feature;
    const std::string features = std::string("\x0a") + char(entry.size()) + entry;
    return std::string("\x0a") + char(features.size()) + features;
  };
  for (const std::string& list : {std::string("\x0a\x01\x07", 3), std::string("\x08\x07", 2)}) {
    const std::string bytes = build(list);
    auto e = decode_image_example(bytes);
    ASSERT_TRUE(e.ok()) << e.status().message();
    EXPECT_EQ(e->label, 7);
  }
  ImageExample seven;
  seven.format.clear();
  seven.colorspace.clear();
  seven.channels = 0;
  seven.label = 7;
  EXPECT_EQ(encode_image_example(seven), build(std::string("\x0a\x01\x07", 3)));
}

TEST(ImageExample, WrongTypesAndMalformedBytesAreErrors) {
  {
    tensorflow::Example proto;
    (*proto.mutable_features()->mutable_feature())["image/class/label"]
        .mutable_float_list()
        ->add_value(1.0f);
    auto e = decode_image_example(proto.SerializeAsString());
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.status().message().find("image/class/label"), std::string::npos);
  }
  {
    tensorflow::Example proto;
    auto& list =
        *(*proto.mutable_features()->mutable_feature())["image/encoded"].mutable_bytes_list();
    list.add_value("a");
    list.add_value("b");
    EXPECT_FALSE(decode_image_example(proto.SerializeAsString()).ok());
  }
  {
    ImageExample e = full_example();
    e.bbox_xmax.pop_back();
    auto back = decode_image_example(encode_image_example(e));
    ASSERT_FALSE(back.ok());
    EXPECT_NE(back.status().message().find("bbox"), std::string::npos);
  }
  EXPECT_FALSE(decode_image_example(std::string("\x0a\x05\x0a", 3)).ok());
}

}  // namespace
}  // namespace ic
