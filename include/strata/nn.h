// nn: a Keras-like model API over the strata IR. Layers are called on symbolic tensors (the Functional API);
// a Model collects them, builds their weights (Keras-default initializers) and emits ONNX-semantics graphs for
// inference, training (forward + loss; the trainer adds the backward pass and the updates) and export.
//
//   auto in = nn::Input({28, 28, 1}, "input_image");
//   auto x = nn::Conv2D(32, 3, {.activation = "relu"})(in);
//   x = nn::MaxPooling2D(2)(x);
//   x = nn::Flatten()(x);
//   auto logits = nn::Dense(10)(x);
//   nn::Model model({in}, {{"logits", logits}});
//   STRATA_RETURN_IF_ERROR(model.Build(/*seed=*/0));
//   std::cout << *model.Summary();
//
// Layout: the API is channels-last (NHWC) like Keras, and weights keep Keras layouts (Conv2D kernel (kh, kw, in,
// out)). Inside the graph, conv/pool/batch-norm run on ONNX's NCHW ops: a value carries its physical layout and is
// transposed only where a layer needs the other one (once after the input, once before Flatten), so a conv stack
// costs two activation transposes. Flatten flattens in NHWC order, as Keras does.
//
// Errors: calling layers records the first error; Model::Build() returns it with the layer as context.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/graph.h"
#include "strata/graph_builder.h"
#include "strata/status.h"
#include "strata/tensor.h"
#include "strata/util.h"  // Rng, which Initializer::Make takes

namespace strata::nn {

// A Keras shape: batch first, -1 for an unknown dimension (the batch).
struct TensorSpec {
  std::vector<int64_t> shape;
  DType dtype = DType::kFloat32;
  int rank() const { return static_cast<int>(shape.size()); }
  // "(None, 26, 26, 32)", as Keras prints it.
  std::string ToString() const;
};

// ---- dtype policies (Keras mixed precision; docs/training.md "Mixed precision") ----

// The arithmetic of a layer's convolutions and matrix products while training (and evaluating) with the Trainer.
// Under a mixed policy, weights, optimizer slots and every tensor between ops stay float32; the Conv, ConvTranspose,
// MatMul and Gemm ops a layer emits (forward, and their gradients: backward data and backward weights) round their
// inputs to the low dtype and accumulate in float32; normalisation, softmax, losses and reductions compute in float32.
enum class DTypePolicy {
  kFloat32,        // "float32"
  kMixedBFloat16,  // "mixed_bfloat16": oneDNN bfloat16 kernels (avx512_bf16), float32 accumulation and output
  kMixedFloat16,   // "mixed_float16": inputs rounded to float16 (overflow -> inf), float32 arithmetic
};
std::string_view DTypePolicyName(DTypePolicy p);  // "float32", "mixed_bfloat16", "mixed_float16"
// Parses a Keras policy name ("float32", "mixed_bfloat16", "mixed_float16") or the CLI's short forms ("none",
// "bf16", "fp16"); InvalidArgument naming `where` and the accepted names otherwise.
StatusOr<DTypePolicy> ParseDTypePolicy(std::string_view text, std::string_view where = "dtype policy");

// ---- initializers (specs/tf-formats.md §6.1) ----

struct Initializer {
  enum class Kind {
    kZeros, kOnes, kConstant, kGlorotUniform, kGlorotNormal, kHeNormal, kHeUniform, kLecunNormal, kLecunUniform,
    kRandomNormal, kRandomUniform
  };
  Kind kind = Kind::kGlorotUniform;
  double value = 0;                         // kConstant
  double mean = 0, stddev = 0.05;           // kRandomNormal
  double minval = -0.05, maxval = 0.05;     // kRandomUniform

  static Initializer Zeros() { return {Kind::kZeros}; }
  static Initializer Ones() { return {Kind::kOnes}; }
  static Initializer Constant(double v) { return {Kind::kConstant, v}; }
  static Initializer GlorotUniform() { return {Kind::kGlorotUniform}; }
  static Initializer HeNormal() { return {Kind::kHeNormal}; }
  // "zeros", "ones", "glorot_uniform", "glorot_normal", "he_normal", "he_uniform", "lecun_normal", "lecun_uniform",
  // "random_normal", "random_uniform".
  static StatusOr<Initializer> FromName(std::string_view name);

  // Fans as Keras computes them: rank 2 (in, out); conv (kh, kw, in, out): receptive field times in / out; rank 1:
  // both the size.
  static std::pair<double, double> Fans(const Shape& shape);
  // A float32 tensor drawn from `rng` (truncated normals re-draw outside +-2 sigma).
  Tensor Make(const Shape& shape, Rng& rng) const;
};

struct WeightSpec {
  std::string name;  // "<layer>/<weight>", e.g. "conv2d/kernel", "batch_normalization/moving_mean"
  Shape shape;
  DType dtype = DType::kFloat32;
  Initializer init;
  bool trainable = true;
};

// ---- emitting IR from a layer ----

// A value flowing between layers while a graph is emitted: an IR value name and its physical layout.
struct Value {
  std::string name;
  bool channels_first = false;  // physically N,C,spatial... for a logical N,spatial...,C value
};

class CallContext {
 public:
  virtual ~CallContext() = default;
  virtual bool training() const = 0;
  // The IR value of this layer's weight `local` ("kernel").
  virtual std::string Weight(std::string_view local) = 0;
  // Adds a node and returns its outputs (names derived from the layer name).
  virtual std::vector<std::string> Emit(std::string_view op, std::vector<std::string> inputs,
                                        graph::AttributeMap attrs = {}, int num_outputs = 1,
                                        std::string_view domain = "") = 0;
  std::string Emit1(std::string_view op, std::vector<std::string> inputs, graph::AttributeMap attrs = {},
                    std::string_view domain = "") {
    return Emit(op, std::move(inputs), std::move(attrs), 1, domain)[0];
  }
  virtual std::string Constant(Tensor value) = 0;
  std::string ConstInts(std::vector<int64_t> v);
  // Physical type of an emitted value (graph shape inference).
  virtual StatusOr<TensorSpec> PhysicalSpec(const std::string& value) = 0;
  // Logical (Keras, channels-last) spec of a value.
  StatusOr<TensorSpec> SpecOf(const Value& v);
  // The value in channels-last / channels-first physical layout (a Transpose when it is not already).
  StatusOr<std::string> ChannelsLast(const Value& v);
  StatusOr<std::string> ChannelsFirst(const Value& v);
  // Declares the new value of a non-trainable weight (batch-norm moving statistics) after a training step.
  virtual void UpdateState(std::string_view local, std::string new_value) = 0;
  // An int64 scalar that changes every training step (seeds SeededDropout).
  virtual std::string StepSeed() = 0;
  virtual const std::string& layer_name() const = 0;
};

// ---- layers ----

namespace internal {
struct CallNode;
}
class Layer;

// A symbolic tensor: output `index` of one layer call.
class KerasTensor {
 public:
  KerasTensor() = default;
  bool defined() const { return node_ != nullptr; }
  const std::shared_ptr<internal::CallNode>& node() const { return node_; }
  int index() const { return index_; }

 private:
  friend class LayerRef;
  friend KerasTensor Input(std::vector<int64_t>, std::string, DType);
  KerasTensor(std::shared_ptr<internal::CallNode> node, int index) : node_(std::move(node)), index_(index) {}
  std::shared_ptr<internal::CallNode> node_;
  int index_ = 0;
};

class Layer {
 public:
  Layer(std::string type, std::string name) : type_(std::move(type)), name_(std::move(name)) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // "Dense", "Conv2D", ... (the Keras class name).
  const std::string& type() const { return type_; }
  // Unique within a model; empty until the model names it ("dense", "dense_1", ... like Keras).
  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  bool trainable() const { return trainable_; }
  // May change at any time, also after the model is built (Keras semantics): the layer's weights become
  // (non-)trainable at once (weights declared non-trainable, such as moving statistics, stay so), a Trainer notices
  // at its next step and recompiles its plan, and a frozen BatchNormalization runs in inference mode.
  void set_trainable(bool t);
  // Keras's per-layer dtype policy: this layer computes under `p` whatever the trainer's global policy
  // (TrainerOptions::mixed_precision) is; unset = the global policy. E.g. keep a sensitive layer in float32 under
  // mixed_bfloat16.
  const std::optional<DTypePolicy>& dtype_policy() const { return dtype_policy_; }
  void set_dtype_policy(std::optional<DTypePolicy> p) { dtype_policy_ = p; }
  virtual int num_outputs() const { return 1; }

  // Declares the weights from the logical input specs (Keras build()). Called once, before the first Call.
  virtual Status Build(const std::vector<TensorSpec>& inputs) { return Status::OK(); }
  // Emits the IR of one call.
  virtual StatusOr<std::vector<Value>> Call(CallContext& ctx, const std::vector<Value>& inputs) = 0;
  // Keras get_config(): the constructor arguments as the text of a JSON object ({"units": 10, ...}), without the
  // name, trainable flag and dtype policy (Model::GetConfig records those). Every layer of this header has one. The
  // default, for a custom layer that does not override it, is Unimplemented naming the layer; a custom layer that
  // overrides it is rebuilt by the factory given to ModelFromConfig in custom_objects.
  virtual StatusOr<std::string> GetConfig() const;

  const std::vector<WeightSpec>& weights() const { return weights_; }
  bool built() const { return built_; }
  void set_built() { built_ = true; }

 protected:
  // Declares weight "<name>/<local>" (from Build). Non-trainable layers make every weight non-trainable.
  void AddWeight(std::string local, std::vector<int64_t> shape, Initializer init, bool trainable = true);

 private:
  std::string type_;
  std::string name_;
  bool trainable_ = true;
  std::optional<DTypePolicy> dtype_policy_;
  bool built_ = false;
  std::vector<WeightSpec> weights_;
  std::vector<bool> declared_trainable_;  // per weight: trainable as declared, before the layer's flag
};

// A shared handle to a layer that can be called on symbolic tensors (calling a layer twice shares its weights).
class LayerRef {
 public:
  LayerRef() = default;
  explicit LayerRef(std::shared_ptr<Layer> layer) : layer_(std::move(layer)) {}
  KerasTensor operator()(const KerasTensor& x) const { return Call({x})[0]; }
  KerasTensor operator()(const std::vector<KerasTensor>& xs) const { return Call(xs)[0]; }
  // Every output of a call.
  std::vector<KerasTensor> Call(const std::vector<KerasTensor>& xs) const;
  Layer* get() const { return layer_.get(); }
  Layer* operator->() const { return layer_.get(); }
  const std::shared_ptr<Layer>& ptr() const { return layer_; }

 private:
  std::shared_ptr<Layer> layer_;
};

// Wraps a user layer: nn::Custom(std::make_shared<MyLayer>(...)).
inline LayerRef Custom(std::shared_ptr<Layer> layer) { return LayerRef(std::move(layer)); }

// A model input: `shape` without the batch dimension; `name` is the IR/serving input name.
KerasTensor Input(std::vector<int64_t> shape, std::string name = "input", DType dtype = DType::kFloat32);

struct DenseOptions {
  std::string activation;  // "" = linear; see Activation
  bool use_bias = true;
  std::string kernel_initializer = "glorot_uniform";
  std::string bias_initializer = "zeros";
  std::string name;
};
LayerRef Dense(int64_t units, DenseOptions options = {});

struct Conv2DOptions {
  std::vector<int64_t> strides = {1, 1};
  std::string padding = "valid";  // "valid" | "same" (the extra pixel goes bottom/right, as Keras)
  std::vector<int64_t> dilation_rate = {1, 1};
  int64_t groups = 1;
  std::string activation;
  bool use_bias = true;
  std::string kernel_initializer = "glorot_uniform";
  std::string bias_initializer = "zeros";
  std::string name;
};
LayerRef Conv2D(int64_t filters, std::vector<int64_t> kernel_size, Conv2DOptions options = {});
inline LayerRef Conv2D(int64_t filters, int64_t k, Conv2DOptions options = {}) {
  return Conv2D(filters, std::vector<int64_t>{k, k}, std::move(options));
}
// Kernel (kh, kw, in, depth_multiplier), as Keras.
LayerRef DepthwiseConv2D(std::vector<int64_t> kernel_size, int64_t depth_multiplier = 1, Conv2DOptions options = {});

struct PoolOptions {
  std::vector<int64_t> strides;  // empty = pool_size
  std::string padding = "valid";
  std::string name;
};
LayerRef MaxPooling2D(std::vector<int64_t> pool_size = {2, 2}, PoolOptions options = {});
inline LayerRef MaxPooling2D(int64_t p, PoolOptions options = {}) { return MaxPooling2D({p, p}, std::move(options)); }
LayerRef AveragePooling2D(std::vector<int64_t> pool_size = {2, 2}, PoolOptions options = {});
// Mean (max) over height and width: (batch, channels), or (batch, 1, 1, channels) with keepdims.
LayerRef GlobalAveragePooling2D(std::string name = "", bool keepdims = false);
LayerRef GlobalMaxPooling2D(std::string name = "", bool keepdims = false);
// Zero rows/columns around the image: {top, bottom, left, right} (Keras ((top, bottom), (left, right))).
LayerRef ZeroPadding2D(std::vector<int64_t> padding, std::string name = "");
// x * scale + offset (Keras Rescaling).
LayerRef Rescaling(double scale, double offset = 0.0, std::string name = "");
// (x - mean) / max(sqrt(variance), 1e-7) over the last axis with fixed statistics (Keras Normalization built with
// mean= and variance=; it has no weights).
LayerRef Normalization(std::vector<float> mean, std::vector<float> variance, std::string name = "");

struct BatchNormOptions {
  double momentum = 0.99;
  double epsilon = 1e-3;
  bool center = true;
  bool scale = true;
  std::string name;
  // Keras's BatchNormalization(synchronized=True) (tf.keras's SyncBatchNormalization): in training, the batch
  // statistics are those of every worker's batch together, and so are the sums in their gradient (the op
  // strata.SyncBatchNormalization reduces them across the workers of a multi-worker Trainer); the moving statistics
  // follow the global ones. With one worker it equals the unsynchronized layer up to float rounding. Inference and
  // frozen layers are unchanged.
  bool synchronized = false;
};
// Channels axis (-1). Training normalises with the batch statistics and updates the moving ones with the biased
// batch variance (Keras 3 semantics); inference and trainable=false layers use the moving statistics.
LayerRef BatchNormalization(BatchNormOptions options = {});
// BatchNormalization with options.synchronized = true.
LayerRef SyncBatchNormalization(BatchNormOptions options = {});
LayerRef LayerNormalization(double epsilon = 1e-3, std::string name = "");
// Inverted dropout in training (SeededDropout, a new mask per step); the identity otherwise. noise_shape (Keras's,
// without the batch dimension): 1 where the mask is shared, e.g. {1, 1, 1} drops whole samples of an image batch
// (stochastic depth); empty: one mask element per element.
LayerRef Dropout(double rate, std::string name = "", std::vector<int64_t> noise_shape = {});
LayerRef Flatten(std::string name = "");
// Target shape without the batch dimension (-1 allowed once).
LayerRef Reshape(std::vector<int64_t> target_shape, std::string name = "");
LayerRef Concatenate(int64_t axis = -1, std::string name = "");
LayerRef Add(std::string name = "");
LayerRef Multiply(std::string name = "");
// relu, relu6, sigmoid, hard_sigmoid (relu6(x + 3) / 6, Keras 3's), tanh, softmax, gelu (erf form), silu (swish),
// hard_swish (x * hard_sigmoid(x)), linear.
LayerRef Activation(std::string activation, std::string name = "");
// int inputs -> float vectors of output_dim (uniform(-0.05, 0.05) init, Keras's default).
LayerRef Embedding(int64_t input_dim, int64_t output_dim, std::string name = "");

// Emits `activation` on a value (shared by Dense/Conv2D/Activation). "" and "linear" return the input.
StatusOr<std::string> EmitActivation(CallContext& ctx, const std::string& activation, const std::string& x,
                                     bool channels_first);

// ---- models ----

struct ModelOutput {
  std::string name;  // the IR output name, e.g. "logits", "features"
  KerasTensor tensor;
};

struct GraphOptions {
  bool training = false;
  // true: weights are graph inputs named like the weights (the trainer feeds them each step);
  // false: weights are initializers holding the current values (export, standalone inference).
  bool weights_as_inputs = true;
  std::string seed_input = "strata/step_seed";  // int64 scalar input, present when some layer needs it
};

struct ForwardGraph {
  graph::Graph graph;
  std::vector<std::string> weight_inputs;         // weight names fed as inputs (weights_as_inputs)
  std::map<std::string, std::string> state_updates;  // non-trainable weight -> IR value after this step
  std::vector<std::pair<std::string, double>> aux_losses;  // IR scalar values added to the loss, with weights
  bool uses_step_seed = false;
};

class Model {
 public:
  Model(std::vector<KerasTensor> inputs, std::vector<ModelOutput> outputs, std::string name = "model");
  Model(KerasTensor input, KerasTensor output, std::string name = "model");
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  Model(Model&&) noexcept;
  ~Model();

  // Names the layers, builds them in topological order from the inferred input specs and initialises every weight
  // (deterministically from `seed` and the weight's name). Returns the first model-building error with the layer
  // as context. Idempotent.
  Status Build(uint64_t seed = 0);
  bool built() const;
  const std::string& name() const;

  // An auxiliary loss: a scalar output of some layer, added to the compiled loss times `weight`.
  void AddLoss(KerasTensor scalar, double weight = 1.0);

  const std::vector<std::string>& input_names() const;
  const std::vector<TensorSpec>& input_specs() const;
  const std::vector<std::string>& output_names() const;
  // The logical (channels-last) spec of each output, in output_names() order (after Build; empty before).
  std::vector<TensorSpec> output_specs() const;
  // Every layer, topologically sorted (after Build).
  std::vector<Layer*> layers() const;
  // The layer named `name_or_index` ("dense_1"), or the index'th of layers() ("3"; negative counts from the end).
  // NotFound naming the closest layer / OutOfRange giving the valid range.
  StatusOr<int> LayerIndex(std::string_view name_or_index) const;
  // Every weight, in creation order (trainable = the weight's own flag and its layer's current one); and the
  // current values by name.
  const std::vector<WeightSpec>& weight_specs() const;
  const std::map<std::string, Tensor>& weights() const;
  StatusOr<Tensor> GetWeight(const std::string& name) const;
  // Replaces values (names, dtypes and shapes must match; InvalidArgument lists every difference).
  Status SetWeights(const std::map<std::string, Tensor>& values);
  int64_t CountParams(bool trainable_only = false) const;

  StatusOr<ForwardGraph> BuildGraph(const GraphOptions& options) const;
  // A standalone inference model (weights as initializers): for export and Predict outside the trainer.
  StatusOr<graph::Model> InferenceModel() const;

  // Keras-style table: layer (type), output shape, params; totals.
  StatusOr<std::string> Summary() const;
  // The architecture as JSON (Keras get_config() of a Functional model; docs/training.md "Model config"): the
  // model name, every layer with its class name, name, constructor arguments (Layer::GetConfig), trainable flag,
  // dtype policy and inbound calls, the inputs (name, shape, dtype), the named outputs and the auxiliary losses. No
  // weights. FailedPrecondition before Build (layers are named there); Unimplemented naming the first layer that
  // cannot describe itself.
  StatusOr<std::string> GetConfig() const;
  // Graphviz of the layer graph.
  StatusOr<std::string> ToDot() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Keras Sequential: Input(input_shape) followed by the layers; one output named `output_name`.
std::unique_ptr<Model> Sequential(std::vector<int64_t> input_shape, std::vector<LayerRef> layers,
                                  std::string name = "sequential", std::string input_name = "input",
                                  std::string output_name = "output");

// ---- model config (Keras from_config; src/nn/model_config.cc) ----

// Keras custom_objects: a layer class name (Layer::type()) -> a function making that layer from its GetConfig() text
// and its name.
using LayerFactory =
    std::function<StatusOr<std::shared_ptr<Layer>>(const std::string& config, const std::string& name)>;
using CustomObjects = std::map<std::string, LayerFactory>;
// Rebuilds a model from Model::GetConfig()'s JSON: the same layers, names, calls, inputs, outputs, trainable flags and
// dtype policies, built with `seed` (weights freshly initialised: load them with SetWeights or LoadWeights). Classes
// in `custom_objects` win over the built-in ones of the same name. Errors (InvalidArgument) name the offending place
// ("layers[3] ('dense_1')") and what was expected: an unknown class, a wrong argument type, an unknown argument, a
// call that refers to a missing layer.
StatusOr<std::unique_ptr<Model>> ModelFromConfig(std::string_view json, const CustomObjects& custom_objects = {},
                                                 uint64_t seed = 0);
// The class names ModelFromConfig knows without custom_objects.
std::vector<std::string> BuiltinLayerClasses();

// Makes every BatchNormalization layer of the built `model` synchronized (BatchNormOptions::synchronized), as
// `strata train --sync_batch_norm` does; a Trainer must not have built its training graph yet. Returns how many.
int SynchronizeBatchNormalization(Model& model);

// ---- weight import (src/nn/weights_import.cc; docs/training.md "Transfer learning") ----

struct LoadWeightsOptions {
  // File tensor name -> model weight name (ONNX initializers: "layer1.0.conv1.weight" -> "conv2d_1/kernel"). With
  // a map, an ONNX file contributes only the mapped initializers; other formats rename the mapped ones.
  std::map<std::string, std::string> name_map;
  // Model weights whose name starts with one of these keep their current values and the file's tensors for them
  // are ignored (a new head: "dense_2/").
  std::vector<std::string> skip_prefixes;
  // File tensors that match no model weight are ignored instead of reported.
  bool ignore_unexpected = false;
};
// Replaces the model's weights by `tensors` (by name after options.name_map). Every missing, unexpected or
// mis-typed weight is reported by name in one InvalidArgument (where = the file), and on any error the model is
// unchanged.
Status AssignWeights(Model& model, const std::map<std::string, Tensor>& tensors, std::string_view where,
                     const LoadWeightsOptions& options = {});
// The tensors of a weights file (see LoadWeights), not yet matched against a model.
struct WeightsFile {
  std::map<std::string, Tensor> tensors;
  std::string where;                    // the file, quoted, for messages
  bool extra_tensors_expected = false;  // ONNX without a name map: initializers no weight asks for are not errors
};
// `model`: needed for Keras HDF5 files, whose weights are matched to the model's by layer name and order (without it
// an HDF5 file is refused).
StatusOr<WeightsFile> ReadWeightsFile(const std::string& path, const LoadWeightsOptions& options = {},
                                      const Model* model = nullptr);
// Loads weights from a file, by its contents: a strata checkpoint directory (its model.safetensors), a
// .safetensors file, an ONNX model (float initializers, by name or options.name_map), or Keras HDF5 (.h5,
// .weights.h5: by layer name, then order within a layer, as LoadKerasWeights). The model must be built.
Status LoadWeights(Model& model, const std::string& path, const LoadWeightsOptions& options = {});

// ---- fine-tuning an imported ONNX model (src/nn/onnx_layer.cc) ----

struct OnnxTransferOptions {
  std::vector<int64_t> input_shape;  // (H, W, C) of the Keras input; fed to the graph NCHW or NHWC as it declares
  std::string head_at;               // the graph tensor the new head reads ("" = the graph's first output)
  int64_t num_classes = 10;
  uint64_t seed = 0;                 // the head's initialisation
  std::string layer_name = "onnx_graph";
  std::string model_name = "onnx_transfer";
};
// Input("input_image") -> the ONNX graph up to `head_at` (one layer, "onnx_graph", whose weights are the graph's
// float initializers under "onnx_graph/<initializer>", trainable except BatchNormalization's running statistics;
// its BatchNormalization nodes run in inference mode, as a frozen Keras BN) -> Flatten -> Dense(num_classes,
// "head") = output "logits". Built, with the initializers' values. The nodes are re-emitted at opset 17 (graphs
// of opset >= 13); a graph with control flow is refused.
StatusOr<std::unique_ptr<Model>> OnnxTransferModel(const std::string& path, const OnnxTransferOptions& options);

// ---- model zoo ----

// "mlp": Flatten, Dense 256 relu, Dense 128 relu, Dense num_classes (the 784-256-128-10 MLP of the PyTorch peer);
// "cnn_small": Conv 32 3x3 relu, MaxPool 2, Conv 64 3x3 relu, MaxPool 2, Flatten, Dense 128 relu, Dropout 0.25,
// Dense num_classes; "resnet18"; and every Application name (include_top, no weights, classes = num_classes, a
// linear classifier). One input "input_image" of `input_shape` (H, W, C), one output "logits".
StatusOr<std::unique_ptr<Model>> ZooModel(std::string_view name, std::vector<int64_t> input_shape,
                                          int64_t num_classes);
std::vector<std::string> ZooModelNames();

// ---- Keras applications (src/nn/zoo/) ----
//
// keras.applications' architectures with Keras's arguments, layer names and weight names (so a Keras weights file
// maps one to one): ResNet50V2, ResNet101V2, ResNet152V2, ResNet50, MobileNetV3Large, MobileNetV3Small,
// EfficientNetV2B0..B3. One input "input_image" (batch, H, W, C) float32; one output (`output_name`).
struct ApplicationOptions {
  bool include_top = true;
  std::string weights;               // "": random initialisation (Keras weights=None); else a Keras .h5/.weights.h5
  std::vector<int64_t> input_shape;  // (H, W, C); empty: the model's default size (224; B1 240, B2 260, B3 300), 3
  std::string pooling;               // without the top: "" (the 4-D feature map), "avg" or "max"
  int64_t classes = 1000;
  std::string classifier_activation = "softmax";  // "" or "linear": logits
  bool include_preprocessing = true;  // MobileNetV3 and EfficientNetV2 (ResNets have none inside the model)
  double alpha = 1.0;                 // MobileNetV3 width multiplier
  bool minimalistic = false;          // MobileNetV3
  double dropout_rate = 0.2;          // MobileNetV3 head dropout
  std::string output_name;            // default "predictions" (with the top) or "features"
};
// Builds (Build(seed)) the named application and, when options.weights is set, loads that file.
StatusOr<std::unique_ptr<Model>> Application(std::string_view name, const ApplicationOptions& options = {},
                                             uint64_t seed = 0);
std::vector<std::string> ApplicationNames();

// Loads a Keras weights file into a built model, by layer name: Keras 3 `.weights.h5` (model.save_weights) or the
// legacy HDF5 format (model.save("m.h5"), keras.applications' downloads: model_weights/<layer>/<weight>). Every
// missing, unexpected or mis-shaped weight is reported by name in one InvalidArgument error, and on any error the
// model is left unchanged. Unreadable or truncated files give DataLoss/NotFound naming the file.
Status LoadKerasWeights(Model& model, const std::string& path);
// The tensors of a Keras weights file keyed by `model`'s weight names (layer name, then order within the layer);
// weights of layers the model lacks, or past a layer's own count, keep their HDF5 path as the key, so that
// AssignWeights reports them as unexpected (and a mis-shaped one as mis-shaped).
StatusOr<std::map<std::string, Tensor>> ReadKerasWeightsFor(const Model& model, const std::string& path);

// ---- losses (emitted into the training graph) ----

// A user loss (Loss::Custom): emits, with `b`, the loss of `y_pred` (the model output) against `y_true` (the labels as
// fed, any dtype: cast them as needed) and returns the name of a float32 scalar, the batch mean as Keras's losses
// are. The trainer differentiates it by graph autodiff, so every op on the path to y_pred needs a gradient.
using LossFn =
    std::function<StatusOr<std::string>(graph::Builder& b, const std::string& y_pred, const std::string& y_true)>;

struct Loss {
  enum class Kind {
    kSparseCategoricalCrossentropy, kCategoricalCrossentropy, kBinaryCrossentropy, kMeanSquaredError,
    kMeanAbsoluteError, kHuber, kCustom
  };
  Kind kind = Kind::kSparseCategoricalCrossentropy;
  bool from_logits = false;  // Keras's default
  double delta = 1.0;        // Huber
  std::string custom_name;   // kCustom: its name in messages
  LossFn custom;             // kCustom

  static Loss SparseCategoricalCrossentropy(bool from_logits = false) { return {Kind::kSparseCategoricalCrossentropy, from_logits}; }
  static Loss CategoricalCrossentropy(bool from_logits = false) { return {Kind::kCategoricalCrossentropy, from_logits}; }
  static Loss BinaryCrossentropy(bool from_logits = false) { return {Kind::kBinaryCrossentropy, from_logits}; }
  static Loss MeanSquaredError() { return {Kind::kMeanSquaredError}; }
  static Loss MeanAbsoluteError() { return {Kind::kMeanAbsoluteError}; }
  static Loss Huber(double delta = 1.0) { return {Kind::kHuber, false, delta}; }
  // A user loss (see LossFn), e.g. a squared error:
  //   nn::Loss::Custom("my_mse", [](graph::Builder& b, const std::string& pred, const std::string& label)
  //                                  -> StatusOr<std::string> {
  //     std::string d = b.Emit1("Sub", {pred, b.Emit1("Cast", {label}, {{"to", graph::Attribute::Int(1)}})});
  //     return b.Emit1("ReduceMean", {b.Emit1("Mul", {d, d})}, {{"keepdims", graph::Attribute::Int(0)}});
  //   });
  static Loss Custom(std::string name, LossFn fn) {
    return {Kind::kCustom, false, 1.0, std::move(name), std::move(fn)};
  }
  // Keras names: "sparse_categorical_crossentropy", "categorical_crossentropy", "binary_crossentropy", "mse",
  // "mean_squared_error", "mae", "mean_absolute_error", "huber".
  static StatusOr<Loss> FromName(std::string_view name, bool from_logits = false);
  // The Keras name, or a custom loss's own.
  std::string name() const;

  // Appends the loss (a float scalar, the batch mean) of y_pred against y_true to `g`; returns its value name, which
  // is `prefix` (nodes are named under it).
  StatusOr<std::string> Emit(graph::Graph* g, const std::string& y_pred, const std::string& y_true,
                             const std::string& prefix) const;
};

// ---- metrics (host-side accumulators over fetched outputs) ----

// The metric interface: the trainer calls Reset at each epoch start (and before evaluation), Update after every
// batch with the labels and the model output, and Result for the logs (under name()). Built-in metrics come from
// MakeMetric; a user subclass is given to the trainer as an instance (train::CompileOptions::metrics).
class Metric {
 public:
  virtual ~Metric() = default;
  virtual const std::string& name() const = 0;
  virtual void Reset() = 0;
  // y_true: labels as fed; y_pred: the model output (probabilities or logits).
  virtual Status Update(const Tensor& y_true, const Tensor& y_pred) = 0;
  virtual double Result() const = 0;
  // Higher is better ("accuracy", "auc", ...)? Used by mode="auto".
  virtual bool higher_is_better() const { return true; }
};

// "accuracy"/"acc" (resolved against the loss: sparse categorical, categorical or binary),
// "sparse_categorical_accuracy", "categorical_accuracy", "binary_accuracy", "top_k_categorical_accuracy" /
// "sparse_top_k_categorical_accuracy" (k = 5; "..._accuracy@k" for another k), "precision", "recall", "auc".
// Binary metrics threshold probabilities at 0.5 (logits, when the loss is binary from_logits, go through a sigmoid).
StatusOr<std::unique_ptr<Metric>> MakeMetric(std::string_view name, const Loss& loss);
// A weighted running mean (the loss tracker): Update(value, weight).
class MeanMetric {
 public:
  explicit MeanMetric(std::string name = "mean") : name_(std::move(name)) {}
  void Reset() { total_ = 0, count_ = 0; }
  void Update(double value, double weight = 1.0) { total_ += value * weight, count_ += weight; }
  double Result() const { return count_ > 0 ? total_ / count_ : 0.0; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  double total_ = 0, count_ = 0;
};

}  // namespace strata::nn
