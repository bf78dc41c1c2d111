// The data stratum: tf.data-style input pipelines in C++ (specs/tf-formats.md §4).
//
//   auto ds = data::Dataset::TfRecord(files)
//                 .Map(data::ParseExampleFn({io::FeatureSpec::FixedLen("label", DType::kInt64), ...}))
//                 .Cache()
//                 .Shuffle(10000, {.seed = 42})
//                 .Batch(64)
//                 .Prefetch(2);
//   auto it = ds.MakeIterator({.epoch = 3});
//   data::Element batch;
//   while (*it->GetNext(&batch)) { ... }
//
// A Dataset is an immutable description; iterators do the work. An element is a set of named tensors plus string
// metadata (source file, record index, ...) that every transformation carries along for error analysis.
//
// Determinism and resumption: with seeds given, the order of every element is a pure function of (seeds, epoch),
// where the epoch is IteratorOptions::epoch (plus the repetition index under Repeat). A run that crashed after
// consuming k elements of epoch e resumes exactly by MakeIterator({.epoch = e}) followed by Skip(k). See
// docs/data.md.
//
// Threads: parallel Map/Interleave and Prefetch use their own std::threads (inter-op / I/O work, separate from
// the OpenMP intra-op pool). Every buffer is bounded; destroying an iterator stops and joins its threads.
// Tensors in an element may share memory with caches and sources: replace a tensor, never write into it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/example.h"
#include "strata/status.h"
#include "strata/tensor.h"
#include "strata/util.h"  // Rng, which RandomMapFn and the random transformations take

namespace strata::data {

// tf.data.AUTOTUNE: parallelism = the number of cores; buffer sizes tuned within their bounds.
inline constexpr int64_t kAutotune = -1;

using Metadata = std::map<std::string, std::string>;
// Metadata keys that sources set.
inline constexpr char kMetaSource[] = "source";  // file the element came from
inline constexpr char kMetaRecord[] = "record";  // index of the record/item/line within that file
inline constexpr char kMetaOffset[] = "offset";  // byte offset of a TFRecord record

struct Element {
  io::NamedTensors tensors;
  // One map per example row: a single map before batching, batch_size maps after Batch.
  std::vector<Metadata> metadata;

  const Tensor* Find(std::string_view name) const;
  // NOT_FOUND naming the missing tensor and the ones present.
  StatusOr<Tensor> Get(std::string_view name) const;
  // Replaces the tensor called `name`, or appends it.
  void Set(std::string_view name, Tensor t);
  bool Erase(std::string_view name);
  // The metadata of the first row (created if there is none).
  Metadata& meta();
  // Where the element came from, for messages: "record 17 (offset 2040) of 'train-0.tfrecord'".
  std::string Describe() const;
  // Bytes of tensor data (string tensors: their characters).
  size_t ByteSize() const;
};

class Iterator {
 public:
  virtual ~Iterator() = default;
  // Produces the next element: true, or false at the end (and false again on later calls). Errors belong to one
  // element where the transformation allows it: the next call continues with the following element.
  virtual StatusOr<bool> GetNext(Element* out) = 0;
  // Skips up to `n` elements and returns how many were skipped (fewer only at the end). Sources skip records
  // without decoding them and Map skips without calling its function, so resuming mid-epoch is cheap.
  virtual StatusOr<int64_t> Skip(int64_t n);
};

struct IteratorOptions {
  int64_t epoch = 0;  // iteration index that seeds reshuffling (shuffle, list_files, sampling, map RNGs)
};

// Counts what filters dropped, per epoch. Thread-safe; shared by the filters that report into it.
class QualityStats {
 public:
  struct Epoch {
    int64_t examined = 0;                    // elements that reached the filters
    std::map<std::string, int64_t> dropped;  // reason -> count
  };
  void AddExamined(int64_t epoch, int64_t n = 1);
  void AddDropped(int64_t epoch, std::string_view reason, int64_t n = 1);
  std::map<int64_t, Epoch> ByEpoch() const;
  Epoch ForEpoch(int64_t epoch) const;
  int64_t TotalDropped(std::string_view reason = "") const;
  // One line per epoch: "epoch 0: examined 60000, dropped 12 (duplicate 10, blank_image 2)".
  std::string Report() const;

 private:
  mutable std::mutex mu_;
  std::map<int64_t, Epoch> epochs_;
};

// Quality checks for Dataset::QualityFilter; each drop is counted under name().
struct QualityCheck {
  enum class Kind { kBlankImage, kLabelRange, kNonFinite, kDuplicate };
  Kind kind = Kind::kNonFinite;
  std::string key;          // tensor to check; empty = every tensor (kNonFinite, kDuplicate)
  double max_stddev = 0;    // kBlankImage: an image whose pixel standard deviation is <= this is blank
  int64_t num_classes = 0;  // kLabelRange: labels must lie in [0, num_classes)

  // Near-constant images; the default threshold is 2 grey levels for uint8 and 2/255 for float images.
  static QualityCheck BlankImage(std::string key, double max_stddev = -1);
  static QualityCheck LabelRange(std::string key, int64_t num_classes);
  static QualityCheck NonFinite(std::string key = "");
  // Exact duplicates by content hash (SHA-256) of `key` (or of all tensors); keeps the first occurrence.
  static QualityCheck Duplicate(std::string key = "");
  // "blank_image", "label_out_of_range", "non_finite" or "duplicate".
  std::string name() const;
};

// Map and filter functions. With num_parallel_calls > 0 a map function runs on several threads at once, so it must
// be safe to call concurrently (the ready-made ones below are).
using MapFn = std::function<Status(Element&)>;
// A map function with a random generator seeded from (seed, epoch, element index): reproducible in parallel.
using RandomMapFn = std::function<Status(Element&, Rng&)>;
using Predicate = std::function<StatusOr<bool>(const Element&)>;

struct MapOptions {
  int64_t num_parallel_calls = 0;  // 0: sequential (TF's None); n > 0 or kAutotune: that many calls in flight
  bool deterministic = true;       // false: emit results as they finish
  std::string name = "map";        // shown in error context
  std::optional<uint64_t> seed;    // RandomMapFn only; unset: a random seed
};

struct InterleaveOptions {
  int64_t cycle_length = kAutotune;  // kAutotune: the number of cores
  int64_t block_length = 1;
  int64_t num_parallel_calls = 0;  // 0: sequential; n or kAutotune: background reads from up to cycle_length inputs
  bool deterministic = true;
  std::string name = "interleave";
};

struct ShuffleOptions {
  std::optional<uint64_t> seed;           // unset: a new random order every time
  bool reshuffle_each_iteration = true;  // false: every epoch has the epoch-0 order
};

struct PaddedBatchOptions {
  // Per tensor name: target shape of one element, -1 = the largest in this batch. Unnamed tensors: all -1.
  std::map<std::string, std::vector<int64_t>> padded_shapes;
  // Per tensor name: scalar filler (default 0, or "" for strings).
  std::map<std::string, Tensor> padding_values;
  bool drop_remainder = false;
};

struct TfRecordOptions {
  std::string compression;          // "", "ZLIB" or "GZIP"
  size_t buffer_size = 256 << 10;   // read buffer per file
  int64_t num_parallel_reads = 0;   // 0: files one after another; k: interleave k files, one record each
  bool skip_corrupt = false;        // skip corrupt records instead of failing with DATA_LOSS
  std::shared_ptr<QualityStats> stats;  // counts skipped records as "corrupt_record"
};

struct CsvOptions {
  bool header = true;                        // the first line names the columns
  char delimiter = ',';
  std::vector<std::string> column_names;     // required without a header
  std::map<std::string, DType> column_types;  // float32, float64, int32, int64 or string (the default)
  std::map<std::string, std::string> defaults;  // used for empty fields; otherwise an empty field is an error
  std::vector<std::string> select_columns;   // empty: all
};

struct ImageFolderOptions {
  std::vector<std::string> extensions = {".jpg", ".jpeg", ".png"};  // case-insensitive
  // Unset: class by class (sorted folders, sorted files). Set: all files in one random order drawn from this seed,
  // the same every epoch (Keras's image_dataset_from_directory(shuffle=True, seed)), so that a Shuffle buffer smaller
  // than the folder does not hand out the first classes first.
  std::optional<uint64_t> shuffle_seed;
};

struct SampleOptions {
  std::vector<double> weights;  // empty: uniform
  std::optional<uint64_t> seed;
  bool stop_on_empty_dataset = false;
  bool rerandomize_each_iteration = false;  // false: the same choices every epoch
};

// Rebalances classes toward a target distribution (long-tail training).
struct RebalanceOptions {
  std::string label = "label";  // int64 or int32 scalar tensor with the class
  int64_t num_classes = 0;
  std::vector<double> target;   // empty: uniform
  std::vector<double> initial;  // the input's class distribution; empty: estimated while reading
  enum class Mode {
    kUndersample,  // rejection sampling: keep each element with probability ∝ target/initial (TF's rejection_resample)
    kOversample,   // repeat factors: emit each element ⌊r⌋ or ⌈r⌉ times, r ∝ target/initial, min r = 1
  };
  Mode mode = Mode::kUndersample;
  std::optional<uint64_t> seed;
};

namespace internal {
class DatasetNode;
}

class Dataset {
 public:
  using InterleaveFn = std::function<StatusOr<Dataset>(const Element&)>;
  using GeneratorFn = std::function<StatusOr<bool>(Element*)>;

  // ---- sources ----
  // Slices every tensor along its first dimension (all must agree); `metadata`, if given, has one map per slice.
  static Dataset FromTensorSlices(io::NamedTensors tensors, std::vector<Metadata> metadata = {});
  // int64 scalars "value" in [start, stop) by step.
  static Dataset Range(int64_t start, int64_t stop, int64_t step = 1);
  // A user callback source; `factory` makes one generator per iteration. Single-threaded; shard to parallelise.
  static Dataset FromGenerator(std::function<GeneratorFn()> factory);
  // String scalars "filename" matching the glob patterns; shuffled (by seed and epoch) unless shuffle = false.
  // No match is NOT_FOUND.
  static Dataset ListFiles(std::vector<std::string> patterns, bool shuffle = true,
                           std::optional<uint64_t> seed = std::nullopt);
  // String scalars "record" with metadata source, record and offset.
  static Dataset TfRecord(std::vector<std::string> files, TfRecordOptions options = {});
  // IDX images (and optional labels): "image" [H, W, 1] (or the item shape for non-3-D files) and "label" int64.
  static Dataset Idx(std::string images_path, std::string labels_path = "");
  // One class per subfolder (sorted names = labels 0..n-1): "image/encoded" (file bytes), "label" int64,
  // "class" string. Decode with Map(image::DecodeFn()).
  static Dataset ImageFolder(std::string dir, ImageFolderOptions options = {});
  static StatusOr<std::vector<std::string>> ImageFolderClasses(const std::string& dir);
  // One element per CSV row (RFC 4180 quoting), a scalar tensor per column.
  static Dataset Csv(std::vector<std::string> files, CsvOptions options = {});

  // ---- transformations ----
  Dataset Map(MapFn fn, MapOptions options = {}) const;
  Dataset MapRandom(RandomMapFn fn, MapOptions options = {}) const;
  Dataset Filter(Predicate pred, std::string name = "filter") const;
  Dataset Interleave(InterleaveFn fn, InterleaveOptions options = {}) const;
  Dataset FlatMap(InterleaveFn fn) const;
  Dataset Shuffle(int64_t buffer_size, ShuffleOptions options = {}) const;
  Dataset Repeat(int64_t count = -1) const;
  Dataset Batch(int64_t batch_size, bool drop_remainder = false) const;
  Dataset PaddedBatch(int64_t batch_size, PaddedBatchOptions options = {}) const;
  // Keeps up to `buffer_size` elements (kAutotune: grows to 16 when the consumer waits) and at most `max_bytes`
  // bytes (0: 256 MiB) ready in a background thread.
  Dataset Prefetch(int64_t buffer_size = kAutotune, size_t max_bytes = 0) const;
  // "" caches in memory; a path caches on disk (see docs/data.md for the lock file and partial-cache rules).
  Dataset Cache(std::string filename = "") const;
  Dataset Shard(int64_t num_shards, int64_t index) const;
  Dataset Take(int64_t count) const;
  Dataset Skip(int64_t count) const;
  // Adds int64 scalar `name` = position (from `start`).
  Dataset Enumerate(int64_t start = 0, std::string name = "index") const;
  Dataset RebalanceClasses(RebalanceOptions options) const;
  Dataset QualityFilter(std::vector<QualityCheck> checks, std::shared_ptr<QualityStats> stats) const;
  // Drops elements whose GetNext failed (counting "error: <CODE>" in stats, which may be null).
  Dataset IgnoreErrors(std::shared_ptr<QualityStats> stats = nullptr) const;

  // Elements of all inputs side by side (tensor names must differ); ends with the shortest input.
  static Dataset Zip(std::vector<Dataset> datasets);
  static Dataset SampleFromDatasets(std::vector<Dataset> datasets, SampleOptions options = {});
  // `choice` yields int64 scalars "value" (e.g. Range) in [0, datasets.size()).
  static Dataset ChooseFromDatasets(std::vector<Dataset> datasets, Dataset choice, bool stop_on_empty_dataset = true);

  // ---- running ----
  // Errors recorded while building the pipeline (bad arguments) are returned here.
  StatusOr<std::unique_ptr<Iterator>> MakeIterator(IteratorOptions options = {}) const;
  // "TfRecord(4 files) -> map(parse) -> batch(64)"
  std::string DebugString() const;

  Dataset();  // an empty dataset with an error: "uninitialised Dataset"
  explicit Dataset(std::shared_ptr<const internal::DatasetNode> node);
  const std::shared_ptr<const internal::DatasetNode>& node() const { return node_; }

 private:
  std::shared_ptr<const internal::DatasetNode> node_;
};

// ---- Example parsing inside pipelines ----

// Replaces the string scalar `input` (a serialized Example) by the tensors of `specs`. Errors name the feature and
// the record (from the element's metadata).
MapFn ParseExampleFn(std::vector<io::FeatureSpec> specs, std::string input = "record");
// The same after Batch: `input` is a string vector; VarLen specs follow their padded/ragged setting.
MapFn ParseExampleBatchFn(std::vector<io::FeatureSpec> specs, std::string input = "record");

// Applies a tensor function to the tensor `name` (replacing it, or writing `output` if given).
MapFn MapTensorFn(std::string name, std::function<StatusOr<Tensor>(const Tensor&)> fn, std::string output = "");
// tf.io.decode_raw: the bytes of each string of `bytes` (all of one length) as `dtype` values (little-endian) of
// `shape` (one -1 is inferred); the result has shape bytes.shape + shape, so a batch of records decodes at once.
StatusOr<Tensor> DecodeRaw(const Tensor& bytes, DType dtype, const std::vector<int64_t>& shape);
MapFn DecodeRawFn(std::string input, std::string output, DType dtype, std::vector<int64_t> shape);

// ---- images: uint8 or float32 tensors [H, W, C] ----
namespace image {

enum class ResizeMethod { kBilinear, kNearest };

// JPEG or PNG to uint8 [H, W, C] (channels 0: as stored). Errors name `where`.
StatusOr<Tensor> Decode(std::string_view bytes, int channels = 0, std::string_view where = "image");
// TF2 tf.image.resize semantics (half-pixel centres, no antialiasing). Bilinear gives float32; nearest keeps the
// dtype.
StatusOr<Tensor> Resize(const Tensor& image, int64_t height, int64_t width,
                        ResizeMethod method = ResizeMethod::kBilinear);
StatusOr<Tensor> Crop(const Tensor& image, int64_t top, int64_t left, int64_t height, int64_t width);
StatusOr<Tensor> CenterCrop(const Tensor& image, int64_t height, int64_t width);
StatusOr<Tensor> RandomCrop(const Tensor& image, int64_t height, int64_t width, Rng& rng);
StatusOr<Tensor> FlipLeftRight(const Tensor& image);
StatusOr<Tensor> FlipUpDown(const Tensor& image);
// x + delta, with delta in [0, 1] units (uint8 images are scaled, adjusted and saturated back).
StatusOr<Tensor> AdjustBrightness(const Tensor& image, float delta);
// (x - mean) * factor + mean, per channel over the image (uint8 saturated back).
StatusOr<Tensor> AdjustContrast(const Tensor& image, float factor);
// uint8 -> float32 times `scale` (default 1/255); a float32 image is returned unchanged.
StatusOr<Tensor> ToFloat(const Tensor& image, float scale = 1.0f / 255.0f);
// (x - mean[c]) / stddev[c] per channel, float32 out; one value each applies to all channels.
StatusOr<Tensor> Normalize(const Tensor& image, const std::vector<float>& mean, const std::vector<float>& stddev);

// Decodes string scalar `input` into uint8 image `output`, naming the record on failure.
MapFn DecodeFn(std::string input = "image/encoded", std::string output = "image", int channels = 0);

}  // namespace image

// ---- dataset version ----

struct ManifestFile {
  std::string path;      // relative to the manifest's base directory
  uint64_t bytes = 0;
  int64_t records = -1;  // TFRecord records (-1: not a TFRecord file)
  std::string sha256;
};
struct Manifest {
  std::string base_dir;
  std::vector<ManifestFile> files;
  uint64_t total_bytes = 0;
  int64_t total_records = 0;
  // SHA-256 over the sorted (path, bytes, records, sha256) lines: the dataset version.
  std::string hash;
  std::string ToJson() const;
};
// Scans the files matching `pattern`: sizes, SHA-256 of contents and TFRecord record counts (compression sniffed
// per file). Paths are relative to the directory of the pattern, so moving the dataset keeps its version.
StatusOr<Manifest> ComputeManifest(const std::string& pattern);

}  // namespace strata::data
