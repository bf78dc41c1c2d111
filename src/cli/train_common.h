// Shared by `strata train`, `strata eval` and `strata export`: the flags of a production train.py, the datasets
// they describe, and reading the weights of a checkpoint (docs/training.md "Checkpoints").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "strata/data.h"
#include "strata/nn.h"
#include "strata/optim.h"
#include "strata/train.h"

namespace strata::cli {

struct TrainFlags {
  std::string config;
  std::string data_dir;           // IDX files: train-images-idx3-ubyte[.gz], train-labels..., t10k-...
  std::string tfrecord_pattern;   // tf.train.Example records (strata data import-idx): image/encoded|image, label
  std::string validation_pattern;
  // TFRecord compression of --tfrecord_pattern/--validation_pattern files: NONE, GZIP or ZLIB; "" or "auto" detects
  // GZIP per file by its magic bytes (a ZLIB stream must be named).
  std::string compression;
  std::string model_name = "cnn_small";
  std::vector<int64_t> input_shape = {28, 28, 1};
  int64_t num_classes = 10;
  int64_t batch_size = 64;
  int epochs = 3;
  double learning_rate = 1e-3;
  std::string lr_schedule = "constant";  // constant | step | cosine | poly
  double warmup_epochs = 0;
  std::string optimizer = "adam";
  double weight_decay = -1;       // < 0: the optimizer's default
  double global_clipnorm = 0;     // 0: none
  std::string checkpoint_dir;
  int keep_checkpoints = 3;  // CheckpointManager max_to_keep (the newest N)
  int keep_best = 0;         // ... plus the best K by checkpoint_monitor
  std::string checkpoint_monitor = "val_loss";
  int64_t checkpoint_steps = 0;  // also save every N steps (0: at epoch ends only)
  std::string log_dir;
  int histogram_freq = 1;                // TensorBoard weight histograms every N epochs (0 = off)
  std::string update_freq = "epoch";     // TensorBoard batch scalars: epoch | batch | N
  uint64_t seed = 0;
  bool deterministic = false;
  bool resume = false;
  bool overwrite = false;  // a fresh run may replace another run's checkpoints in --checkpoint_dir
  int64_t memory_limit_mb = 0;
  int intra_op_threads = 0;
  graph::ConvAlgorithm conv_algorithm = graph::ConvAlgorithm::kAuto;
  int64_t steps_per_epoch = -1;
  int verbose = 1;
  std::string export_dir;         // after training: export <export_dir>/<model_name>/1 (see strata export)
  // The rest of a production train.py's flags. What strata does not do yet is refused, never ignored.
  int num_gpus = 0;                   // strata trains on CPUs: only 0
  std::string distribution_strategy;  // "", default, one_device, mirrored (one process); multi_worker_mirrored (MPI)
  std::string mixed_precision = "none";  // none (float32), bf16 (mixed_bfloat16), fp16 (mixed_float16)
  std::string loss_scale = "auto";       // auto (dynamic under fp16), dynamic, off
  bool enable_xla = false;            // accepted: strata always compiles the step into one optimised plan
  bool terminate_on_nan = true;       // stop at the first step whose loss is NaN or infinite (TerminateOnNaN)
  bool check_numerics = false;        // name the first op of a step that produces NaN or infinity
  std::string input_signature;        // fixed input shapes (graph::ParseInputSignature); partial batches dropped
  std::string profile_steps;          // "A,B": a Chrome trace of training steps A..B (Keras profile_batch)
  std::string profile;                // the trace's file (besides <log_dir>/plugins/profile/...)
  // multi_worker_mirrored (docs/training.md "Multi-worker training").
  double allreduce_bucket_mb = 25;    // gradient buckets of this many MB, each its own non-blocking allreduce
  double collective_timeout_s = 60;   // the longest any worker waits for the others
  bool allreduce_overlap = true;      // each gradient bucket's allreduce starts during the backward pass...
  bool allreduce_overlap_given = false;  // ...when the flag was given; else only for gradients of 4 MiB or more
  bool sync_batch_norm = false;       // the model's BatchNormalization layers synchronized across the workers
  // Data subsets (train and validation): keep the examples of these labels, relabelled 0..k-1 in this order; and
  // the first N examples of each class of the training set (IDX data; 0 = all).
  std::vector<int64_t> classes;
  int64_t examples_per_class = 0;
  // Transfer learning (docs/training.md "Transfer learning").
  std::string weights;                  // initial weights: checkpoint dir, .safetensors, .onnx, (.h5: not yet)
  std::string weights_name_map;         // JSON object: file tensor name -> model weight name
  bool new_head = false;                // re-initialise the head (last layer with weights) even when it fits
  bool freeze_base = false;             // phase 1: only the head trains
  int head_epochs = -1;                 // epochs of phase 1 (-1: --epochs)
  std::string fine_tune_at;             // phase 2: this layer (name or index) and the later ones train
  int fine_tune_epochs = 0;             // epochs of phase 2
  double fine_tune_learning_rate = -1;  // constant lr of phase 2 (< 0: --learning_rate / 10)
  std::string lr_multipliers;           // "prefix=m,prefix=m": per-variable lr multipliers by name prefix
  // Image input: class subfolders of JPEG/PNG files (labels = sorted folder names), decoded to --input_shape's
  // channels and resized to its H x W; training-time augmentation (also for --tfrecord_pattern images).
  std::string image_dir;
  std::string validation_image_dir;
  bool random_flip = false;       // left-right, p = 0.5
  bool random_crop = false;       // resize to 9/8 of H x W, then a random H x W crop
  double random_rotation = 0;     // degrees: a uniform angle in [-d, d], nearest neighbour, zero fill
  // Fine-tuning an ONNX model: the graph up to --head_at, then a new Dense head (nn::OnnxTransferModel).
  std::string onnx_model;
  std::string head_at;
};

// "--learning_rate" -> "--learning_rate,--learning-rate": TensorFlow's underscore spelling, with dashes accepted as
// aliases (also for a comma-separated list of names), for CLI11's add_option/add_flag.
std::string FlagNames(const std::string& names);
// Adds the flags to a subcommand; `eval` leaves out the training-only ones.
void AddTrainFlags(CLI::App* cmd, TrainFlags* f, bool training);
// Applies --config FILE (JSON with the flag names as keys) for every flag not given on the command line, then checks
// the flags: an unknown flag names the closest valid one; a flag whose feature is not built says so.
Status ApplyConfig(CLI::App* cmd, TrainFlags* f);
// --distribution_strategy multi_worker_mirrored (or TF's class name MultiWorkerMirroredStrategy).
bool IsMultiWorker(const TrainFlags& f);
// A file pattern of the flags: relative patterns are under --data_dir when it is given (train.py's
// --data_dir D --tfrecord_pattern 'train-*.tfrecord').
std::string DataPattern(const TrainFlags& f, const std::string& pattern);

// Which part of the training data a worker reads (multi_worker_mirrored): by file when there are at least as many
// TFRecord files as workers, else by example.
struct WorkerShard {
  int workers = 1;
  int index = 0;
};

// Batched datasets of "input_image" float32 [B, H, W, C] in [0, 1] and "label" int64 [B]. For one of several
// workers: that worker's shard, in batches of batch_size / workers, without a last partial batch.
StatusOr<data::Dataset> TrainDataset(const TrainFlags& f, const WorkerShard& shard = {});
StatusOr<data::Dataset> TestDataset(const TrainFlags& f, bool raw_pixels = false);
// Batches per epoch of a dataset (iterates it once with Skip).
StatusOr<int64_t> CountBatches(const data::Dataset& ds);

StatusOr<optim::Schedule> MakeSchedule(const TrainFlags& f, int64_t steps_per_epoch);

// The checkpoint --checkpoint_dir names: a checkpoint directory itself (it has state.json) or a CheckpointManager
// directory (its latest checkpoint). NotFound when there is none.
StatusOr<train::Checkpoint> ReadCheckpointFlag(const std::string& checkpoint_dir);
// Loads a checkpoint's weights into a built model (names, dtypes and shapes checked, every difference listed).
Status LoadCheckpointWeights(nn::Model* model, const std::string& checkpoint_dir);
// The model of --checkpoint_dir with its weights (src/cli/checkpoint_model.cc): rebuilt from the checkpoint's
// model_config.json, where --model_name, --input_shape and --num_classes, when given, must agree with it (and then
// take its values); a checkpoint without a config needs those flags (the zoo model they name).
StatusOr<std::unique_ptr<nn::Model>> CheckpointModel(CLI::App* cmd, TrainFlags* f);
// The version (manifest hash) of the training files the flags name.
StatusOr<std::string> TrainDataHash(const TrainFlags& f);

}  // namespace strata::cli
