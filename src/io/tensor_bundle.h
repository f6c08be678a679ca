// TensorFlow's V2 checkpoint format ("tensor bundle"), what tf.train.Saver writes and
// tf.train.load_checkpoint / tf.train.latest_checkpoint read. A checkpoint is a prefix
// (model_dir/model.ckpt-1200) and two files:
//   <prefix>.data-00000-of-00001   every tensor's bytes, back to back (little-endian,
//                                  row-major; no padding)
//   <prefix>.index                 a LevelDB-format table (no compression, no filter), keys
//                                  sorted bytewise: "" -> BundleHeaderProto{num_shards: 1,
//                                  endianness: LITTLE, version{producer: 1}}, then each
//                                  tensor's name -> BundleEntryProto{dtype, shape, shard_id,
//                                  offset, size, crc32c: masked CRC-32C of the bytes}
// (messages in proto/tensor_bundle.proto). The checkpoint metadata travels as one more
// tensor, kBundleMetadataKey: a DT_STRING scalar holding the metadata map as a JSON object,
// encoded as TensorFlow encodes strings, so TensorFlow lists and reads it like any other.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/checkpoint_contents.h"

namespace ic {

// The bundle entry that holds CheckpointContents::metadata.
inline constexpr char kBundleMetadataKey[] = "inception_cpp/metadata";

std::string bundle_index_path(const std::string& prefix);  // <prefix>.index
// <prefix>.data-<shard>-of-<num_shards>, five digits each as TensorFlow names them.
std::string bundle_data_path(const std::string& prefix, int shard = 0, int num_shards = 1);

// Creates the prefix's directory if needed (as TensorFlow does), then writes the data file,
// then the index, each ATOMICALLY (temp file, fsync, rename, directory
// fsync): once the index exists the data it describes is complete. Tensors go into the data
// file in name order. Names must be unique, non-empty, and not "" or kBundleMetadataKey.
Status write_tensor_bundle(const std::string& prefix,
                           const std::map<std::string, std::string>& metadata,
                           const std::vector<TensorView>& tensors);

// Reads and validates the whole bundle: the table's block checksums, the header (one or more
// shards, little-endian, a version this reader accepts), every entry (a dtype we hold:
// float32, bfloat16, int32, int64, or the metadata string; a valid shape whose byte size is
// the entry's size; not a slice of a partitioned variable), every byte range (inside its data
// file, with overflow-checked arithmetic) and every tensor's CRC-32C. Errors name the file,
// the tensor and what is wrong. The metadata entry, if present, fills `metadata`; a bundle
// TensorFlow wrote without it reads with empty metadata.
Result<CheckpointContents> read_tensor_bundle(const std::string& prefix);

}  // namespace ic
