// TensorFlow's TensorBundle checkpoint format, read side: the `variables/variables.index` table of a SavedModel (or
// the `.index` file of a tf.train.Checkpoint) and the data shards it points into.
//
// The index is a LevelDB-format table (a sorted string table): data blocks of prefix-compressed keys with restart
// points, each followed by a 5-byte trailer (compression type: 0 none, 1 Snappy; masked CRC-32C of the block and the
// type byte), an index block mapping keys to data-block handles, and a 48-byte footer ending in the magic number
// 0xdb4775248b80fb57. The value under the empty key is a BundleHeaderProto (shard count, endianness); every other
// value is a BundleEntryProto: dtype, shape, shard, offset and size of the tensor's bytes in
// `<prefix>.data-<shard>-of-<count>`, and their masked CRC-32C.
//
// Every offset, size and count read from the files is checked against the bytes present before it is used: a
// damaged or hostile file gives an InvalidArgument/DataLoss error that names the file (and the tensor), never a
// crash or silently wrong values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/tensor.h"

namespace strata::tf {

// The strata dtype of a tensorflow.DataType number; kUndefined for types strata has no tensors for.
DType DTypeOfTf(int tf_dtype);

// The key/value pairs of a LevelDB-format table held in `contents`, in table order. `where` (the file name) starts
// every error. Verifies every block's CRC; decompresses Snappy blocks.
StatusOr<std::vector<std::pair<std::string, std::string>>> ReadTable(std::string_view contents,
                                                                     std::string_view where);

struct BundleEntry {
  std::string key;
  int tf_dtype = 0;    // tensorflow.DataType number
  DType dtype = DType::kUndefined;  // kUndefined when strata has no such tensor type (the entry still lists)
  Shape shape;
  int32_t shard_id = 0;
  int64_t offset = 0;
  int64_t size = 0;
  uint32_t masked_crc32c = 0;
  bool sliced = false;  // a partitioned variable's slices: not readable here
};

class TensorBundle {
 public:
  // Opens `<prefix>.index` (e.g. "<saved_model>/variables/variables") and checks that every shard it names exists.
  static StatusOr<TensorBundle> Open(const std::string& prefix);
  // Parses an index table already in memory (fuzzing, tests); shards are looked up under `prefix` on Read.
  static StatusOr<TensorBundle> FromIndex(std::string_view index_contents, const std::string& prefix);

  const std::map<std::string, BundleEntry, std::less<>>& entries() const { return entries_; }
  const BundleEntry* Find(std::string_view key) const;
  int num_shards() const { return num_shards_; }
  const std::string& prefix() const { return prefix_; }
  std::string ShardPath(int shard) const;

  // Reads and CRC-checks one tensor. NotFound (listing close keys) for an unknown key; DataLoss on a CRC mismatch
  // or a short shard.
  StatusOr<Tensor> Read(std::string_view key) const;
  // A string-typed entry (DT_STRING), e.g. the "_CHECKPOINTABLE_OBJECT_GRAPH" of a TF2 checkpoint.
  StatusOr<std::vector<std::string>> ReadStrings(std::string_view key) const;

 private:
  StatusOr<std::string> ReadBytes(const BundleEntry& e, bool check_crc = true) const;
  std::string prefix_;
  int num_shards_ = 1;
  std::map<std::string, BundleEntry, std::less<>> entries_;
};

// Writes `tensors` (numeric dtypes and strings) as a one-shard TensorBundle: `<prefix>.index` (uncompressed table
// blocks) and `<prefix>.data-00000-of-00001`, each tensor's bytes with its masked CRC-32C, as TF writes them; TF's
// tf.train.load_checkpoint reads it. Creates the prefix's directory. Written to temporary names, then renamed.
Status WriteTensorBundle(const std::string& prefix, const std::map<std::string, Tensor>& tensors);

// TF2 object-based checkpoints (tf.train.Checkpoint): variables addressed by their object paths, e.g.
// "model/dense/kernel" for the key "model/dense/kernel/.ATTRIBUTES/VARIABLE_VALUE", found through the
// "_CHECKPOINTABLE_OBJECT_GRAPH" TrackableObjectGraph.
//
// Reads every VARIABLE_VALUE attribute reachable from the root (slot variables and other attributes are skipped).
StatusOr<std::map<std::string, Tensor>> ReadObjectCheckpoint(const std::string& prefix);

// A Keras model's layers as a TF2 checkpoint holds them: tf.train.Checkpoint(model=keras_model, ...) tracks the
// model's layer list by position (Keras 3: "model/_operations/<i>" for a Functional model,
// "model/_functional/_operations/<i>" for a Sequential one), each layer's variables as its children ("_kernel",
// "bias", "gamma", "moving_mean", ...), and records each variable's Keras path ("dense/kernel",
// "sequential/dense/kernel") as the attribute's full_name. Layer names themselves are not in the checkpoint.
struct KerasCheckpointVariable {
  std::string attribute;  // the layer's attribute name, e.g. "_kernel"
  std::string full_name;  // the variable's Keras path, e.g. "conv2d/kernel" ("" when the writer recorded none)
  std::string checkpoint_key;  // its bundle key, e.g. "optimizer/_trainable_variables/0/.ATTRIBUTES/VARIABLE_VALUE"
  Tensor value;
};
struct KerasCheckpointLayer {
  std::string path;  // object path of the layer, e.g. "model/_operations/2"
  std::vector<KerasCheckpointVariable> variables;
};
// The layers that own variables, in the model's layer order (nested models flattened in place), of the Keras model
// at object path `model_path` ("model" for tf.train.Checkpoint(model=...)). NotFound when there is no such object,
// InvalidArgument when it is not a Keras model or has no variables.
StatusOr<std::vector<KerasCheckpointLayer>> ReadKerasCheckpointLayers(const std::string& prefix,
                                                                      const std::string& model_path = "model");
// Writes `by_path` ("a/b/kernel" -> value) with an object graph whose children follow the paths' components, so
// that tf.train.Checkpoint(a=...).restore(prefix) assigns each variable (the root object is the Checkpoint).
Status WriteObjectCheckpoint(const std::string& prefix, const std::map<std::string, Tensor>& by_path);

}  // namespace strata::tf
