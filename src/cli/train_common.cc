#include "cli/train_common.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include "core/file_util.h"
#include "core/json.h"
#include "core/logging.h"
#include "core/random.h"
#include "io/idx.h"
#include "io/tfrecord.h"
#include "serve/core/signature.h"
#include "strata/onnx.h"

namespace strata::cli {

StatusOr<Tensor> ResizeU8(const Tensor& img, int64_t height, int64_t width);

std::string FlagNames(const std::string& names) {
  std::string out = names;
  size_t pos = 0;
  while (pos < names.size()) {
    size_t end = names.find(',', pos);
    if (end == std::string::npos) end = names.size();
    std::string dashed = names.substr(pos, end - pos);
    for (size_t i = 2; i < dashed.size(); ++i)
      if (dashed[i] == '_') dashed[i] = '-';
    if (dashed != names.substr(pos, end - pos)) out += "," + dashed;
    pos = end + 1;
  }
  return out;
}

void AddTrainFlags(CLI::App* cmd, TrainFlags* f, bool training) {
  cmd->allow_extras();  // unknown flags are reported by ApplyConfig, with the closest valid name
  cmd->add_option("--config", f->config, "JSON file whose keys are these flags' names (flags given here win)");
  cmd->add_option(FlagNames("--data_dir"), f->data_dir,
                  "Data directory: IDX files (train-*/t10k-*-ubyte[.gz], e.g. Fashion-MNIST), or the directory "
                  "that relative --tfrecord_pattern/--validation_pattern globs are in");
  cmd->add_option(FlagNames("--tfrecord_pattern"), f->tfrecord_pattern,
                  "Glob of TFRecord files of tf.train.Example (image/encoded or image, label); relative: under "
                  "--data_dir");
  cmd->add_option(FlagNames("--validation_pattern"), f->validation_pattern,
                  "Glob of validation TFRecord files (relative: under --data_dir)");
  cmd->add_option("--compression", f->compression,
                  "TFRecord compression: NONE, GZIP or ZLIB (default: auto, GZIP detected by its magic bytes)");
  cmd->add_option(FlagNames("--model_name"), f->model_name, "Zoo model: mlp, cnn_small, cnn_small_same, resnet18, or a Keras application (ResNet50V2, ResNet50, MobileNetV3Large, EfficientNetV2B0, ...; see strata zoo --help)");
  cmd->add_option(FlagNames("--input_shape"), f->input_shape, "H W C of one example")->expected(3);
  cmd->add_option(FlagNames("--num_classes"), f->num_classes, "Number of classes");
  cmd->add_option(FlagNames("--batch_size"), f->batch_size, "Global batch size");
  cmd->add_option(FlagNames("--checkpoint_dir"), f->checkpoint_dir,
                  "Checkpoints (safetensors + state.json) saved each epoch, read by --resume, eval, export");
  cmd->add_option("--seed", f->seed, "Seed of weights, shuffling and dropout");
  cmd->add_option(FlagNames("--memory_limit_mb"), f->memory_limit_mb, "Executor memory limit (0 = none)");
  cmd->add_option(FlagNames("--intra_op_threads"), f->intra_op_threads, "Intra-op threads (0 = one per core)");
  AddConvAlgorithmOption(cmd, &f->conv_algorithm);
  cmd->add_option("--classes", f->classes,
                  "Keep only these labels (comma-separated), relabelled 0..k-1 in this order (train and validation)")
      ->delimiter(',');
  cmd->add_option(FlagNames("--image_dir"), f->image_dir,
                  "Training images: one subfolder of JPEG/PNG files per class (sorted names = labels 0..n-1), "
                  "decoded to --input_shape's channels and resized to its H x W");
  cmd->add_option(FlagNames("--validation_image_dir"), f->validation_image_dir,
                  "Validation images, laid out like --image_dir");
  if (!training) return;
  cmd->add_flag(FlagNames("--random_flip"), f->random_flip, "Augment: flip training images left-right (p = 0.5)");
  cmd->add_flag(FlagNames("--random_crop"), f->random_crop,
                "Augment: resize training images to 9/8 of H x W, then crop a random H x W");
  cmd->add_option(FlagNames("--random_rotation"), f->random_rotation,
                  "Augment: rotate training images by a uniform angle in [-D, D] degrees (nearest, zero fill)");
  cmd->add_option(FlagNames("--examples_per_class"), f->examples_per_class,
                  "Train on the first N examples of each class only (IDX --data_dir; 0 = all)");
  cmd->add_option("--weights", f->weights,
                  "Initial weights: a strata checkpoint directory, .safetensors (by weight name), .onnx (float "
                  "initializers by name), Keras .h5, or the prefix of a Keras model's tf.train.Checkpoint. The head (last layer with weights) is "
                  "re-initialised when its shape differs (another --num_classes) or with --new_head");
  cmd->add_option(FlagNames("--onnx_model"), f->onnx_model,
                  "Fine-tune an ONNX model (e.g. a torchvision export) instead of a zoo model: its float "
                  "initializers train, a new Dense head of --num_classes reads --head_at");
  cmd->add_option(FlagNames("--head_at"), f->head_at,
                  "With --onnx_model: the graph tensor the new head reads (default: the graph's output)");
  cmd->add_option(FlagNames("--weights_name_map"), f->weights_name_map,
                  "JSON object mapping --weights tensor names to model weight names, e.g. {\"layer1.0.conv1.weight\": "
                  "\"conv2d_1/kernel\"} (with an ONNX file only the mapped initializers are read)");
  cmd->add_flag(FlagNames("--new_head"), f->new_head, "Re-initialise the head instead of loading it from --weights");
  cmd->add_flag(FlagNames("--freeze_base"), f->freeze_base,
                "Phase 1: freeze every layer but the head (frozen BatchNormalization runs in inference mode)");
  cmd->add_option(FlagNames("--head_epochs"), f->head_epochs, "Epochs of phase 1 with --freeze_base (default --epochs)");
  cmd->add_option(FlagNames("--fine_tune_at"), f->fine_tune_at,
                  "Phase 2: unfreeze this layer (name or index, see the summary) and every later one");
  cmd->add_option(FlagNames("--fine_tune_epochs"), f->fine_tune_epochs, "Epochs of phase 2 (--fine_tune_at)");
  cmd->add_option(FlagNames("--fine_tune_learning_rate"), f->fine_tune_learning_rate,
                  "Constant learning rate of phase 2 (default --learning_rate / 10)");
  cmd->add_option(FlagNames("--lr_multipliers"), f->lr_multipliers,
                  "Learning-rate multipliers by weight-name prefix: 'conv2d=0.1,dense_1/=10' (first match wins)");
  cmd->add_option("--epochs", f->epochs, "Epochs");
  cmd->add_option(FlagNames("--learning_rate"), f->learning_rate, "Base learning rate");
  cmd->add_option(FlagNames("--lr_schedule"), f->lr_schedule, "constant, step (x0.1 at 50% and 75%), cosine, poly");
  cmd->add_option(FlagNames("--warmup_epochs"), f->warmup_epochs, "Linear warmup epochs (cosine)");
  cmd->add_option("--optimizer", f->optimizer, "sgd, adam, adamw, rmsprop");
  cmd->add_option(FlagNames("--weight_decay"), f->weight_decay, "Decoupled weight decay (default: the optimizer's)");
  cmd->add_option(FlagNames("--global_clipnorm"), f->global_clipnorm, "Clip gradients by global norm (0 = off)");
  cmd->add_option(FlagNames("--log_dir"), f->log_dir, "Training logs: training.csv and TensorBoard runs train/, validation/");
  cmd->add_option(FlagNames("--histogram_freq"), f->histogram_freq, "TensorBoard weight histograms every N epochs (0 = off)");
  cmd->add_option(FlagNames("--update_freq"), f->update_freq, "TensorBoard scalars: epoch, batch or every N batches");
  cmd->add_flag("--deterministic", f->deterministic, "Bitwise-reproducible run (one intra-op thread unless set)");
  cmd->add_flag("--resume", f->resume, "Continue from the latest checkpoint of --checkpoint_dir (bitwise-identically)");
  cmd->add_flag("--overwrite", f->overwrite,
                "Start a new run in a --checkpoint_dir that holds another run's checkpoints, deleting them");
  cmd->add_option(FlagNames("--keep_checkpoints"), f->keep_checkpoints, "Keep the newest N checkpoints");
  cmd->add_option(FlagNames("--keep_best"), f->keep_best, "Also keep the best K checkpoints by --checkpoint_monitor");
  cmd->add_option(FlagNames("--checkpoint_monitor"), f->checkpoint_monitor,
                  "Metric ranking --keep_best (min unless it has 'acc')");
  cmd->add_option(FlagNames("--checkpoint_steps"), f->checkpoint_steps, "Also checkpoint every N steps (0 = epoch ends only)");
  cmd->add_option(FlagNames("--steps_per_epoch"), f->steps_per_epoch, "Batches per epoch (-1 = the whole dataset)");
  cmd->add_option("--verbose", f->verbose, "0 silent, 1 progress bar, 2 one line per epoch");
  cmd->add_option(FlagNames("--export_dir"), f->export_dir, "Export the trained model to <export_dir>/<model_name>/1");
  cmd->add_option(FlagNames("--num_gpus"), f->num_gpus, "GPUs to train on: strata trains on CPUs, so only 0 (the default)");
  cmd->add_option(FlagNames("--distributed_strategy,--distribution_strategy"), f->distribution_strategy,
                  "default, one_device or mirrored (one process on this machine's CPUs); multi_worker_mirrored: "
                  "data-parallel workers started by mpirun, srun or the MPI Operator (docs/training.md)");
  cmd->add_option(FlagNames("--allreduce_bucket_mb"), f->allreduce_bucket_mb,
                  "multi_worker_mirrored: gradients fused into buckets of this many MB, one non-blocking "
                  "allreduce each");
  cmd->add_option(FlagNames("--collective_timeout_s"), f->collective_timeout_s,
                  "multi_worker_mirrored: the longest a worker waits for the others before failing, naming the "
                  "worker that is gone");
  cmd->add_flag(FlagNames("--allreduce_overlap"), f->allreduce_overlap,
                "multi_worker_mirrored: start each bucket's allreduce during the backward pass, as soon as its "
                "gradients exist (=false: after the backward pass; the same result bits). Default: overlap when the "
                "gradients total 4 MiB or more");
  cmd->add_flag(FlagNames("--sync_batch_norm"), f->sync_batch_norm,
                "Make the model's BatchNormalization layers synchronized (Keras SyncBatchNormalization): batch "
                "statistics over every worker's batch");
  cmd->add_option(FlagNames("--mixed_precision"), f->mixed_precision,
                  "none (float32), bf16 (Keras mixed_bfloat16: convolutions and matmuls in oneDNN bfloat16) or fp16 "
                  "(mixed_float16: their operands rounded to float16, with dynamic loss scaling)");
  cmd->add_option(FlagNames("--loss_scale"), f->loss_scale,
                  "Dynamic loss scaling (Keras LossScaleOptimizer: 2^15, x2 after 2000 finite steps, /2 and skip on "
                  "inf/NaN): auto (on under fp16), dynamic or off");
  cmd->add_flag(FlagNames("--terminate_on_nan"), f->terminate_on_nan,
                "Stop at the first step whose loss is NaN or infinite, naming it (default true; =false to train on)");
  cmd->add_flag(FlagNames("--check_numerics"), f->check_numerics,
                "Check every op's outputs for NaN and infinity and name the first op that makes one (slower)");
  cmd->add_option(FlagNames("--input_signature"), f->input_signature,
                  "Fix the model input's shape up front, e.g. [None,28,28,1] or input_image:[-1,28,28,1]:float32 "
                  "(tf.function input_signature; JSON accepted): inputs that do not fit are refused before a plan is "
                  "compiled, and the last partial batch of each epoch is dropped, so training compiles one plan");
  cmd->add_option(FlagNames("--profile_steps,--profile_batch"), f->profile_steps,
                  "A,B (or N): write a Chrome trace of training steps A..B (1-based), per op time and memory, to "
                  "<log_dir>/plugins/profile/<time>/<host>.trace.json.gz (TensorBoard's profile plugin) and/or --profile");
  cmd->add_option(FlagNames("--profile"), f->profile,
                  "With --profile_steps: also write the trace here (.json, or .json.gz gzip-compressed)");
  cmd->add_flag(FlagNames("--enable_xla"), f->enable_xla,
                "Accepted: strata always compiles the training step into one optimised plan (XLA's job in TF)");
}

namespace {

// Every flag and option name of the command, without dashes.
std::vector<std::string> OptionNames(CLI::App* cmd) {
  std::vector<std::string> names;
  for (const CLI::Option* o : cmd->get_options())
    for (const std::string& n : o->get_lnames()) names.push_back(n);
  return names;
}

Status RejectUnknownFlags(CLI::App* cmd) {
  for (const std::string& arg : cmd->remaining()) {
    if (arg.rfind("-", 0) != 0)
      return InvalidArgumentError("unexpected argument '", arg, "' (flags take the form --name value)");
    std::string name = arg.substr(arg.find_first_not_of('-'));
    name = name.substr(0, name.find('='));
    return InvalidArgumentError("unknown flag --", name, " (did you mean --", serve::ClosestName(name, OptionNames(cmd)),
                                "?); see strata ", cmd->get_name(), " --help");
  }
  return Status::OK();
}

// The train.py flags whose features strata does not have: refused with what to do instead.
Status CheckTrainPyFlags(const TrainFlags& f) {
  if (f.num_gpus != 0)
    return UnimplementedError("--num_gpus ", f.num_gpus, ": strata trains on CPUs and has no GPU support yet; leave "
                              "--num_gpus out or give 0");
  const std::string& d = f.distribution_strategy;
  if (!d.empty() && d != "default" && d != "one_device" && d != "mirrored" && d != "off" && !IsMultiWorker(f))
    return InvalidArgumentError("--distribution_strategy '", d, "' is not known: give default, one_device or "
                                "mirrored (one process), or multi_worker_mirrored (workers started by mpirun)");
  if (f.allreduce_bucket_mb <= 0 || f.collective_timeout_s <= 0)
    return InvalidArgumentError("--allreduce_bucket_mb (", f.allreduce_bucket_mb, ") and --collective_timeout_s (",
                                f.collective_timeout_s, ") must be > 0");
  STRATA_RETURN_IF_ERROR(nn::ParseDTypePolicy(f.mixed_precision, "--mixed_precision").status());
  STRATA_RETURN_IF_ERROR(train::ParseLossScaleMode(f.loss_scale, "--loss_scale").status());
  return Status::OK();
}

}  // namespace

Status ApplyConfigFile(CLI::App* cmd, TrainFlags* f);

Status ApplyConfig(CLI::App* cmd, TrainFlags* f) {
  STRATA_RETURN_IF_ERROR(RejectUnknownFlags(cmd));
  STRATA_RETURN_IF_ERROR(ApplyConfigFile(cmd, f));
  try {
    if (cmd->count("--allreduce_overlap") > 0) f->allreduce_overlap_given = true;
  } catch (const CLI::OptionNotFound&) {  // a command without the flag
  }
  return CheckTrainPyFlags(*f);
}

Status ApplyConfigFile(CLI::App* cmd, TrainFlags* f) {
  if (f->config.empty()) return Status::OK();
  STRATA_ASSIGN_OR_RETURN(std::string text, ReadFile(f->config));
  STRATA_ASSIGN_OR_RETURN(Json j, Json::Parse(text, f->config));
  if (!j.is_object()) return InvalidArgumentError(f->config, ": expected a JSON object of flag names");
  for (const auto& [key, v] : j.as_object()) {
    const std::string flag = "--" + key;
    bool known = true;
    try {
      if (cmd->count(flag) > 0) continue;  // the command line wins
    } catch (const CLI::OptionNotFound&) {
      known = false;
    }
    if (!known)
      return InvalidArgumentError(f->config, ": unknown key '", key, "' (did you mean '",
                                  serve::ClosestName(key, OptionNames(cmd)), "'?)");
    auto str = [&](std::string* out) -> Status {
      if (!v.is_string()) return InvalidArgumentError(f->config, ": '", key, "' must be a string");
      *out = v.as_string();
      return Status::OK();
    };
    auto num = [&](auto* out) -> Status {
      if (!v.is_number()) return InvalidArgumentError(f->config, ": '", key, "' must be a number");
      *out = static_cast<std::remove_pointer_t<decltype(out)>>(v.as_double());
      return Status::OK();
    };
    if (key == "data_dir") STRATA_RETURN_IF_ERROR(str(&f->data_dir));
    else if (key == "tfrecord_pattern") STRATA_RETURN_IF_ERROR(str(&f->tfrecord_pattern));
    else if (key == "validation_pattern") STRATA_RETURN_IF_ERROR(str(&f->validation_pattern));
    else if (key == "compression") STRATA_RETURN_IF_ERROR(str(&f->compression));
    else if (key == "model_name") STRATA_RETURN_IF_ERROR(str(&f->model_name));
    else if (key == "weights") STRATA_RETURN_IF_ERROR(str(&f->weights));
    else if (key == "weights_name_map") STRATA_RETURN_IF_ERROR(str(&f->weights_name_map));
    else if (key == "image_dir") STRATA_RETURN_IF_ERROR(str(&f->image_dir));
    else if (key == "validation_image_dir") STRATA_RETURN_IF_ERROR(str(&f->validation_image_dir));
    else if (key == "random_rotation") STRATA_RETURN_IF_ERROR(num(&f->random_rotation));
    else if (key == "onnx_model") STRATA_RETURN_IF_ERROR(str(&f->onnx_model));
    else if (key == "head_at") STRATA_RETURN_IF_ERROR(str(&f->head_at));
    else if (key == "fine_tune_at") {
      if (v.is_number()) f->fine_tune_at = StrCat(static_cast<int64_t>(v.as_double()));
      else STRATA_RETURN_IF_ERROR(str(&f->fine_tune_at));
    } else if (key == "lr_multipliers") STRATA_RETURN_IF_ERROR(str(&f->lr_multipliers));
    else if (key == "head_epochs") STRATA_RETURN_IF_ERROR(num(&f->head_epochs));
    else if (key == "fine_tune_epochs") STRATA_RETURN_IF_ERROR(num(&f->fine_tune_epochs));
    else if (key == "fine_tune_learning_rate") STRATA_RETURN_IF_ERROR(num(&f->fine_tune_learning_rate));
    else if (key == "examples_per_class") STRATA_RETURN_IF_ERROR(num(&f->examples_per_class));
    else if (key == "classes") {
      if (!v.is_array()) return InvalidArgumentError(f->config, ": 'classes' must be an array of labels, e.g. [5, 6]");
      f->classes.clear();
      for (const Json& c : v.as_array()) {
        if (!c.is_number()) return InvalidArgumentError(f->config, ": 'classes' must hold numbers");
        f->classes.push_back(static_cast<int64_t>(c.as_double()));
      }
    }
    else if (key == "lr_schedule") STRATA_RETURN_IF_ERROR(str(&f->lr_schedule));
    else if (key == "optimizer") STRATA_RETURN_IF_ERROR(str(&f->optimizer));
    else if (key == "checkpoint_dir") STRATA_RETURN_IF_ERROR(str(&f->checkpoint_dir));
    else if (key == "log_dir") STRATA_RETURN_IF_ERROR(str(&f->log_dir));
    else if (key == "input_signature") STRATA_RETURN_IF_ERROR(str(&f->input_signature));
    else if (key == "profile_steps" || key == "profile_batch") STRATA_RETURN_IF_ERROR(str(&f->profile_steps));
    else if (key == "profile") STRATA_RETURN_IF_ERROR(str(&f->profile));
    else if (key == "export_dir") STRATA_RETURN_IF_ERROR(str(&f->export_dir));
    else if (key == "distributed_strategy" || key == "distribution_strategy")
      STRATA_RETURN_IF_ERROR(str(&f->distribution_strategy));
    else if (key == "mixed_precision") STRATA_RETURN_IF_ERROR(str(&f->mixed_precision));
    else if (key == "loss_scale") STRATA_RETURN_IF_ERROR(str(&f->loss_scale));
    else if (key == "num_gpus") STRATA_RETURN_IF_ERROR(num(&f->num_gpus));
    else if (key == "update_freq") STRATA_RETURN_IF_ERROR(str(&f->update_freq));
    else if (key == "histogram_freq") STRATA_RETURN_IF_ERROR(num(&f->histogram_freq));
    else if (key == "checkpoint_monitor") STRATA_RETURN_IF_ERROR(str(&f->checkpoint_monitor));
    else if (key == "keep_checkpoints") STRATA_RETURN_IF_ERROR(num(&f->keep_checkpoints));
    else if (key == "keep_best") STRATA_RETURN_IF_ERROR(num(&f->keep_best));
    else if (key == "checkpoint_steps") STRATA_RETURN_IF_ERROR(num(&f->checkpoint_steps));
    else if (key == "num_classes") STRATA_RETURN_IF_ERROR(num(&f->num_classes));
    else if (key == "batch_size") STRATA_RETURN_IF_ERROR(num(&f->batch_size));
    else if (key == "epochs") STRATA_RETURN_IF_ERROR(num(&f->epochs));
    else if (key == "learning_rate") STRATA_RETURN_IF_ERROR(num(&f->learning_rate));
    else if (key == "warmup_epochs") STRATA_RETURN_IF_ERROR(num(&f->warmup_epochs));
    else if (key == "weight_decay") STRATA_RETURN_IF_ERROR(num(&f->weight_decay));
    else if (key == "global_clipnorm") STRATA_RETURN_IF_ERROR(num(&f->global_clipnorm));
    else if (key == "allreduce_bucket_mb") STRATA_RETURN_IF_ERROR(num(&f->allreduce_bucket_mb));
    else if (key == "collective_timeout_s") STRATA_RETURN_IF_ERROR(num(&f->collective_timeout_s));
    else if (key == "seed") STRATA_RETURN_IF_ERROR(num(&f->seed));
    else if (key == "memory_limit_mb") STRATA_RETURN_IF_ERROR(num(&f->memory_limit_mb));
    else if (key == "intra_op_threads") STRATA_RETURN_IF_ERROR(num(&f->intra_op_threads));
    else if (key == "conv_algorithm") {
      if (!v.is_string()) return InvalidArgumentError(f->config, ": 'conv_algorithm' must be \"auto\" or \"direct\"");
      STRATA_ASSIGN_OR_RETURN(f->conv_algorithm, graph::ParseConvAlgorithm(v.as_string(), f->config + ": conv_algorithm"));
    } else if (key == "steps_per_epoch") STRATA_RETURN_IF_ERROR(num(&f->steps_per_epoch));
    else if (key == "verbose") STRATA_RETURN_IF_ERROR(num(&f->verbose));
    else if (key == "deterministic" || key == "resume" || key == "overwrite" || key == "enable_xla" ||
             key == "terminate_on_nan" || key == "check_numerics" || key == "new_head" || key == "freeze_base" ||
             key == "random_flip" || key == "random_crop" || key == "allreduce_overlap" ||
             key == "sync_batch_norm") {
      if (!v.is_bool()) return InvalidArgumentError(f->config, ": '", key, "' must be true or false");
      if (key == "allreduce_overlap") f->allreduce_overlap_given = true;
      (key == "allreduce_overlap"  ? f->allreduce_overlap
       : key == "sync_batch_norm"  ? f->sync_batch_norm
       : key == "random_flip"      ? f->random_flip
       : key == "random_crop"      ? f->random_crop
       : key == "new_head"         ? f->new_head
       : key == "freeze_base"      ? f->freeze_base
       : key == "deterministic"    ? f->deterministic
       : key == "resume"           ? f->resume
       : key == "overwrite"        ? f->overwrite
       : key == "terminate_on_nan" ? f->terminate_on_nan
       : key == "check_numerics"   ? f->check_numerics
                                   : f->enable_xla) = v.as_bool();
    } else {
      return InvalidArgumentError(f->config, ": key '", key, "' cannot be set from a config file");
    }
  }
  return Status::OK();
}

namespace {

// The IDX file of `stem` in dir, with or without .gz.
StatusOr<std::string> IdxFile(const std::string& dir, const std::string& stem) {
  for (const char* ext : {"", ".gz"}) {
    const std::string p = JoinPath(dir, stem + ext);
    if (FileExists(p)) return p;
  }
  return NotFoundError("no ", stem, "[.gz] in --data_dir '", dir, "'");
}

// uint8 images [B, H, W, C] -> "input_image" float32 in [0, 1] (or raw 0..255 with raw_pixels).
data::MapFn ToModelInput(bool raw_pixels) {
  return [raw_pixels](data::Element& e) -> Status {
    STRATA_ASSIGN_OR_RETURN(Tensor img, e.Get("image"));
    if (img.dtype() != DType::kUInt8) return InvalidArgumentError("expected uint8 images, got ", img.TypeString());
    Tensor f = Tensor::Empty(DType::kFloat32, img.shape());
    const uint8_t* __restrict p = img.data<uint8_t>();
    float* __restrict q = f.data<float>();
    const float scale = raw_pixels ? 1.0f : 1.0f / 255.0f;
    const int64_t n = img.num_elements();
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) q[i] = static_cast<float>(p[i]) * scale;
    e.Erase("image");
    e.Set("input_image", std::move(f));
    return Status::OK();
  };
}

// The compression of the TFRecord files: --compression when given, else GZIP when every file is a GZIP stream (by
// its magic bytes), none when no file is; a mix is an error naming one file of each kind.
StatusOr<std::string> RecordsCompression(const std::vector<std::string>& files, const TrainFlags& f) {
  if (!f.compression.empty() && f.compression != "auto" && f.compression != "AUTO") {
    STRATA_ASSIGN_OR_RETURN(io::Compression c, io::ParseCompression(f.compression));
    return std::string(io::CompressionName(c));
  }
  std::string gzip_file, plain_file;
  for (const std::string& file : files) {
    STRATA_ASSIGN_OR_RETURN(bool gzip, io::LooksLikeGzipTfRecordFile(file));
    (gzip ? gzip_file : plain_file) = file;
  }
  if (!gzip_file.empty() && !plain_file.empty())
    return InvalidArgumentError("the TFRecord files mix compressions: '", gzip_file, "' is GZIP, '", plain_file,
                                "' is not; give files of one kind (or pass --compression to name it)");
  return std::string(gzip_file.empty() ? "" : "GZIP");
}

// tf.train.Example records with image/encoded (PNG/JPEG) or raw image bytes (+ image/shape), and label.
// With a worker shard whose worker count is at most the file count, only the files i with i % workers == index
// (sorted by name), and *by_file says so.
StatusOr<data::Dataset> RecordsDataset(const std::string& pattern, const TrainFlags& f, const WorkerShard& shard = {},
                                       bool* by_file = nullptr) {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> files, Glob(pattern));
  if (files.empty()) return NotFoundError("no files match '", pattern, "'");
  std::sort(files.begin(), files.end());
  if (shard.workers > 1 && static_cast<int64_t>(files.size()) >= shard.workers) {
    std::vector<std::string> mine;
    for (size_t i = shard.index; i < files.size(); i += shard.workers) mine.push_back(files[i]);
    files = std::move(mine);
    if (by_file != nullptr) *by_file = true;
  }
  STRATA_ASSIGN_OR_RETURN(std::string compression, RecordsCompression(files, f));
  std::vector<io::FeatureSpec> specs = {
      io::FeatureSpec::FixedLen("image/encoded", DType::kString, {}, Tensor::Scalar<std::string>("")),
      io::FeatureSpec::FixedLen("image", DType::kString, {}, Tensor::Scalar<std::string>("")),
      io::FeatureSpec::FixedLen("label", DType::kInt64)};
  const std::vector<int64_t> shape = f.input_shape;
  data::MapFn decode = [shape](data::Element& e) -> Status {
    STRATA_ASSIGN_OR_RETURN(Tensor enc, e.Get("image/encoded"));
    STRATA_ASSIGN_OR_RETURN(Tensor raw, e.Get("image"));
    Tensor img;
    const std::string& bytes = enc.data<std::string>()[0];
    if (!bytes.empty()) {
      STRATA_ASSIGN_OR_RETURN(img, data::image::Decode(bytes, static_cast<int>(shape[2]), e.Describe()));
      STRATA_ASSIGN_OR_RETURN(img, ResizeU8(img, shape[0], shape[1]));  // encoded images of any size
    } else {
      STRATA_ASSIGN_OR_RETURN(img, data::DecodeRaw(raw, DType::kUInt8, shape));
    }
    if (img.shape() != Shape(shape))
      return InvalidArgumentError(e.Describe(), ": image is ", img.shape().ToString(), ", --input_shape says ", shape);
    e.Erase("image/encoded");
    e.Set("image", std::move(img));
    return Status::OK();
  };
  return data::Dataset::TfRecord(files, {.compression = compression})
      .Map(data::ParseExampleFn(specs), {.name = "parse"})
      .Map(decode, {.num_parallel_calls = 2, .name = "decode"});
}

}  // namespace

// A uint8 [H, W, C] image resized (bilinear, TF2 semantics) to height x width, rounded back to uint8.
StatusOr<Tensor> ResizeU8(const Tensor& img, int64_t height, int64_t width) {
  if (img.rank() == 3 && img.dim(0) == height && img.dim(1) == width) return img;
  STRATA_ASSIGN_OR_RETURN(Tensor r, data::image::Resize(img, height, width));
  Tensor out = Tensor::Empty(DType::kUInt8, r.shape());
  const float* p = r.data<float>();
  uint8_t* q = out.data<uint8_t>();
  for (int64_t i = 0; i < r.num_elements(); ++i) q[i] = static_cast<uint8_t>(std::clamp(std::lround(p[i]), 0L, 255L));
  return out;
}

// Rotation of a uint8 [H, W, C] image about its centre by `degrees` (nearest neighbour; outside pixels are 0).
Tensor RotateU8(const Tensor& img, double degrees) {
  const int64_t h = img.dim(0), w = img.dim(1), c = img.dim(2);
  Tensor out = Tensor::Zeros(DType::kUInt8, img.shape());
  const double a = degrees * M_PI / 180.0, cs = std::cos(a), sn = std::sin(a);
  const double cy = (h - 1) / 2.0, cx = (w - 1) / 2.0;
  const uint8_t* p = img.data<uint8_t>();
  uint8_t* q = out.data<uint8_t>();
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      // The source of (y, x): the inverse rotation.
      const double sx = cs * (x - cx) + sn * (y - cy) + cx, sy = -sn * (x - cx) + cs * (y - cy) + cy;
      const int64_t ix = std::lround(sx), iy = std::lround(sy);
      if (ix < 0 || iy < 0 || ix >= w || iy >= h) continue;
      std::memcpy(q + (y * w + x) * c, p + (iy * w + ix) * c, c);
    }
  return out;
}

// Training-time augmentation of one uint8 "image" (before batching): random crop, flip, rotation.
data::RandomMapFn AugmentFn(const TrainFlags& f) {
  const int64_t h = f.input_shape[0], w = f.input_shape[1];
  const bool crop = f.random_crop, flip = f.random_flip;
  const double rot = f.random_rotation;
  return [=](data::Element& e, Rng& rng) -> Status {
    STRATA_ASSIGN_OR_RETURN(Tensor img, e.Get("image"));
    if (img.dtype() != DType::kUInt8 || img.rank() != 3)
      return InvalidArgumentError(e.Describe(), ": augmentation expects a uint8 [H, W, C] image, got ",
                                  img.TypeString());
    if (crop) {
      STRATA_ASSIGN_OR_RETURN(img, ResizeU8(img, h + h / 8, w + w / 8));
      STRATA_ASSIGN_OR_RETURN(img, data::image::RandomCrop(img, h, w, rng));
    }
    if (flip && rng.Below(2) == 1) {
      STRATA_ASSIGN_OR_RETURN(img, data::image::FlipLeftRight(img));
    }
    if (rot > 0) img = RotateU8(img, (2 * rng.UniformDouble() - 1) * rot);
    e.Set("image", std::move(img));
    return Status::OK();
  };
}

// An image folder: "image" uint8 [H, W, C] of --input_shape, "label" int64.
// Training reads the files in one order drawn from --seed (the folders are class by class, and the shuffle buffer
// after the cache is smaller than a large folder); validation reads them sorted.
data::Dataset ImageDirDataset(const std::string& dir, const TrainFlags& f, bool shuffle_files) {
  const int64_t h = f.input_shape[0], w = f.input_shape[1];
  const int channels = static_cast<int>(f.input_shape[2]);
  data::ImageFolderOptions folder;
  if (shuffle_files) folder.shuffle_seed = f.seed;
  return data::Dataset::ImageFolder(dir, folder)
      .Map([h, w, channels](data::Element& e) -> Status {
        STRATA_ASSIGN_OR_RETURN(Tensor enc, e.Get("image/encoded"));
        STRATA_ASSIGN_OR_RETURN(Tensor img, data::image::Decode(enc.data<std::string>()[0], channels, e.Describe()));
        STRATA_ASSIGN_OR_RETURN(img, ResizeU8(img, h, w));
        e.Erase("image/encoded");
        e.Erase("class");
        e.Set("image", std::move(img));
        return Status::OK();
      }, {.num_parallel_calls = 2, .name = "decode_resize"});
}

// --classes: keeps the examples whose label is listed, relabelled by its position in the list.
StatusOr<data::Dataset> SelectClasses(data::Dataset base, const std::vector<int64_t>& classes) {
  if (classes.empty()) return base;
  std::map<int64_t, int64_t> index;
  for (size_t i = 0; i < classes.size(); ++i)
    if (!index.emplace(classes[i], static_cast<int64_t>(i)).second)
      return InvalidArgumentError("--classes lists label ", classes[i], " twice");
  auto label_of = [](const data::Element& e) -> StatusOr<int64_t> {
    STRATA_ASSIGN_OR_RETURN(Tensor t, e.Get("label"));
    if (t.num_elements() != 1 || t.dtype() != DType::kInt64)
      return InvalidArgumentError(e.Describe(), ": --classes needs one int64 label per example, got ", t.TypeString());
    return t.data<int64_t>()[0];
  };
  return base
      .Filter([index, label_of](const data::Element& e) -> StatusOr<bool> {
        STRATA_ASSIGN_OR_RETURN(int64_t l, label_of(e));
        return index.count(l) > 0;
      }, "classes")
      .Map([index, label_of](data::Element& e) -> Status {
        STRATA_ASSIGN_OR_RETURN(int64_t l, label_of(e));
        e.Set("label", Tensor::Scalar<int64_t>(index.at(l)));
        return Status::OK();
      }, {.name = "relabel"});
}

// --examples_per_class: the positions of the first N examples of each (selected) class of an IDX labels file.
StatusOr<data::Dataset> FirstPerClass(data::Dataset base, const std::string& labels_path, const TrainFlags& f) {
  STRATA_ASSIGN_OR_RETURN(Tensor labels, io::ReadIdx(labels_path));
  if (labels.dtype() != DType::kUInt8 || labels.rank() != 1)
    return InvalidArgumentError("--examples_per_class: '", labels_path, "' is not an IDX file of uint8 labels");
  std::set<int64_t> wanted(f.classes.begin(), f.classes.end());
  std::map<int64_t, int64_t> count;
  auto keep = std::make_shared<std::set<int64_t>>();
  for (int64_t i = 0; i < labels.num_elements(); ++i) {
    const int64_t l = labels.data<uint8_t>()[i];
    if (!wanted.empty() && !wanted.count(l)) continue;
    if (count[l]++ < f.examples_per_class) keep->insert(i);
  }
  for (int64_t c : f.classes)
    if (count[c] < f.examples_per_class)
      return InvalidArgumentError("--examples_per_class ", f.examples_per_class, ": class ", c, " has only ",
                                  count[c], " examples in '", labels_path, "'");
  LogInfo("--examples_per_class ", f.examples_per_class, ": training on ", keep->size(), " examples of ",
          count.size(), " classes");
  return base.Enumerate(0, "strata/position")
      .Filter([keep](const data::Element& e) -> StatusOr<bool> {
        STRATA_ASSIGN_OR_RETURN(Tensor i, e.Get("strata/position"));
        return keep->count(i.data<int64_t>()[0]) > 0;
      }, "examples_per_class")
      .Map([](data::Element& e) -> Status {
        e.Erase("strata/position");
        return Status::OK();
      }, {.name = "drop_position"});
}

bool IsMultiWorker(const TrainFlags& f) {
  return f.distribution_strategy == "multi_worker_mirrored" || f.distribution_strategy == "MultiWorkerMirroredStrategy";
}

std::string DataPattern(const TrainFlags& f, const std::string& pattern) {
  if (pattern.empty() || f.data_dir.empty() || pattern[0] == '/') return pattern;
  return JoinPath(f.data_dir, pattern);
}

StatusOr<data::Dataset> TrainDataset(const TrainFlags& f, const WorkerShard& shard) {
  data::Dataset base;
  int64_t buffer = 60000;
  bool by_file = false;
  if (shard.workers > 1 && (f.batch_size % shard.workers != 0 || f.batch_size < shard.workers))
    return InvalidArgumentError("--batch_size ", f.batch_size, " is the global batch: it must split evenly across the ",
                                shard.workers, " workers (give a multiple of ", shard.workers, ")");
  if (!f.image_dir.empty()) {
    if (f.examples_per_class > 0)
      return UnimplementedError("--examples_per_class works on IDX data (--data_dir) only so far");
    if (shard.workers > 1) return UnimplementedError("--image_dir with multi_worker_mirrored is not built yet");
    base = ImageDirDataset(f.image_dir, f, /*shuffle_files=*/true);
    buffer = 10000;
  } else if (!f.tfrecord_pattern.empty()) {
    if (f.examples_per_class > 0)
      return UnimplementedError("--examples_per_class works on IDX data (--data_dir) only so far");
    STRATA_ASSIGN_OR_RETURN(base, RecordsDataset(DataPattern(f, f.tfrecord_pattern), f, shard, &by_file));
    buffer = 10000;
  } else if (!f.data_dir.empty()) {
    STRATA_ASSIGN_OR_RETURN(std::string images, IdxFile(f.data_dir, "train-images-idx3-ubyte"));
    STRATA_ASSIGN_OR_RETURN(std::string labels, IdxFile(f.data_dir, "train-labels-idx1-ubyte"));
    base = data::Dataset::Idx(images, labels);
    if (f.examples_per_class > 0) {
      STRATA_ASSIGN_OR_RETURN(base, FirstPerClass(base, labels, f));
    }
  } else {
    return InvalidArgumentError("give --data_dir (IDX files) or --tfrecord_pattern");
  }
  if (f.examples_per_class < 0) return InvalidArgumentError("--examples_per_class must be >= 0");
  STRATA_ASSIGN_OR_RETURN(base, SelectClasses(base, f.classes));
  if (f.random_rotation < 0 || f.random_rotation > 180)
    return InvalidArgumentError("--random_rotation must be in [0, 180] degrees, got ", f.random_rotation);
  const bool augment = f.random_crop || f.random_flip || f.random_rotation > 0;
  // Cache the decoded uint8 examples; shuffle by (seed, epoch); augment; convert whole batches.
  if (shard.workers <= 1) {
    base = base.Cache().Shuffle(buffer, {.seed = f.seed});
    if (augment) base = base.MapRandom(AugmentFn(f), {.num_parallel_calls = 2, .name = "augment", .seed = f.seed});
    // Under --input_signature every batch is whole (the partial last one is dropped): one training plan.
    return base.Batch(f.batch_size, /*drop_remainder=*/!f.input_signature.empty())
        .Map(ToModelInput(false), {.name = "to_float"})
        .Prefetch(2);
  }
  // Several workers: each reads its files (by_file) or every workers-th example of the same shuffled order, in
  // batches of batch_size / workers (whole ones only: every worker must take the same number of steps). Sharding the
  // shuffled order by example makes the union of the workers' k-th batches the k-th global batch of one worker.
  data::Dataset shuffled = base.Cache().Shuffle(buffer, {.seed = by_file ? f.seed + shard.index : f.seed});
  if (!by_file) shuffled = shuffled.Shard(shard.workers, shard.index);
  if (augment)
    shuffled = shuffled.MapRandom(AugmentFn(f), {.num_parallel_calls = 2, .name = "augment",
                                                 .seed = f.seed + static_cast<uint64_t>(shard.index)});
  return shuffled.Batch(f.batch_size / shard.workers, /*drop_remainder=*/true)
      .Map(ToModelInput(false), {.name = "to_float"})
      .Prefetch(2);
}

StatusOr<data::Dataset> TestDataset(const TrainFlags& f, bool raw_pixels) {
  data::Dataset base;
  if (!f.validation_image_dir.empty()) {
    base = ImageDirDataset(f.validation_image_dir, f, /*shuffle_files=*/false);
  } else if (!f.image_dir.empty()) {
    return NotFoundError("no validation data: --image_dir gives the training images only; give "
                         "--validation_image_dir for validation");
  } else if (!f.validation_pattern.empty()) {
    STRATA_ASSIGN_OR_RETURN(base, RecordsDataset(DataPattern(f, f.validation_pattern), f));
  } else if (!f.tfrecord_pattern.empty()) {
    return NotFoundError("no validation data: --tfrecord_pattern gives the training records only; give "
                         "--validation_pattern for validation");
  } else if (!f.data_dir.empty()) {
    STRATA_ASSIGN_OR_RETURN(std::string images, IdxFile(f.data_dir, "t10k-images-idx3-ubyte"));
    STRATA_ASSIGN_OR_RETURN(std::string labels, IdxFile(f.data_dir, "t10k-labels-idx1-ubyte"));
    base = data::Dataset::Idx(images, labels);
  } else {
    return InvalidArgumentError("give --data_dir (IDX files) or --validation_pattern");
  }
  STRATA_ASSIGN_OR_RETURN(base, SelectClasses(base, f.classes));
  return base.Cache().Batch(std::max<int64_t>(f.batch_size, 256)).Map(ToModelInput(raw_pixels), {.name = "to_float"});
}

StatusOr<int64_t> CountBatches(const data::Dataset& ds) {
  STRATA_ASSIGN_OR_RETURN(auto it, ds.MakeIterator({}));
  return it->Skip(INT64_MAX / 2);
}

StatusOr<optim::Schedule> MakeSchedule(const TrainFlags& f, int64_t steps_per_epoch) {
  const int64_t total = std::max<int64_t>(1, steps_per_epoch * f.epochs);
  const int64_t warmup = static_cast<int64_t>(std::llround(f.warmup_epochs * double(steps_per_epoch)));
  if (warmup > 0 && f.lr_schedule != "cosine")
    return InvalidArgumentError("--warmup_epochs needs --lr_schedule cosine (Keras CosineDecay's warmup)");
  if (f.lr_schedule == "constant") return optim::ConstantLR(f.learning_rate);
  if (f.lr_schedule == "step")
    return optim::PiecewiseConstantDecay({total / 2, total * 3 / 4},
                                         {f.learning_rate, f.learning_rate * 0.1, f.learning_rate * 0.01});
  if (f.lr_schedule == "cosine") {
    if (warmup > 0) return optim::CosineDecay(0.0, std::max<int64_t>(1, total - warmup), 0.0, f.learning_rate, warmup);
    return optim::CosineDecay(f.learning_rate, total);
  }
  if (f.lr_schedule == "poly") return optim::PolynomialDecay(f.learning_rate, total);
  return InvalidArgumentError("--lr_schedule must be constant, step, cosine or poly, got '", f.lr_schedule, "'");
}

StatusOr<train::Checkpoint> ReadCheckpointFlag(const std::string& dir) {
  if (FileExists(JoinPath(dir, "state.json"))) return train::ReadCheckpoint(dir);
  if (!FileExists(JoinPath(dir, "checkpoint")))
    return NotFoundError("no checkpoint in '", dir,
                         "' (expected a checkpoint directory with state.json, or a `checkpoint` state file)");
  STRATA_ASSIGN_OR_RETURN(auto manager, train::CheckpointManager::Open(dir, {.max_to_keep = 0}));
  STRATA_ASSIGN_OR_RETURN(std::optional<train::Checkpoint> c, manager->ReadLatest());
  if (!c) return NotFoundError("the `checkpoint` state file of '", dir, "' names no checkpoint");
  return std::move(*c);
}

Status LoadCheckpointWeights(nn::Model* model, const std::string& dir) {
  STRATA_ASSIGN_OR_RETURN(train::Checkpoint c, ReadCheckpointFlag(dir));
  STRATA_RETURN_IF_ERROR(train::CheckWeightsMatch(*model, c.state.weights, StrCat("checkpoint '", c.path, "'")));
  return model->SetWeights(c.state.weights);
}

StatusOr<std::string> TrainDataHash(const TrainFlags& f) {
  const std::string pattern = !f.image_dir.empty()          ? JoinPath(f.image_dir, "*/*")
                              : !f.tfrecord_pattern.empty() ? DataPattern(f, f.tfrecord_pattern)
                                                            : JoinPath(f.data_dir, "train-*-ubyte*");
  STRATA_ASSIGN_OR_RETURN(data::Manifest m, data::ComputeManifest(pattern));
  return m.hash;
}

}  // namespace strata::cli
