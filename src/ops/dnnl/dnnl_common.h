// The oneDNN adapter: private to src/ops/dnnl/ (the only folder that includes oneDNN headers).
//
// One CPU engine for the process; a stream per thread; dnnl::error turned into Status (no exception escapes);
// memory-descriptor helpers; and PrimitiveKernel, the Kernel every oneDNN fast kernel is built from.
//
// A PrimitiveKernel is a short program of oneDNN primitives (reorders and one compute primitive, usually) over
// buffers: the node's inputs and outputs (bound per run), constants prepared once at plan time (weights reordered
// into the layout the primitive prefers) and per-run temporaries. Temporaries and the primitives' scratchpads (user
// mode) live in the run's scratch memory (KernelContext::Scratch: planned once in the plan's arena, shared by all
// steps, counted against the memory limit). Every concurrent run borrows an execution slot (memory objects and
// argument arrays) from the kernel's pool, so Run is thread-safe and allocates nothing in the steady state.
// Primitives are executed through the C API with prebuilt argument arrays (the C++ execute() builds an
// unordered_map per call).
//
// Threads: the CPU runtime is OpenMP, the same as strata's ParallelFor, so oneDNN and strata's own kernels share
// one pool. A primitive uses the OpenMP thread count of the thread that created it (the plan compiles on the calling
// thread, after SessionOptions::intra_op_threads has been applied); small work (SmallWork) is created and run on
// the calling thread alone.
#pragma once

#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <span>
#include <string>
#include <vector>

#include "ops/bf16_output.h"
#include "ops/inplace.h"
#include "ops/op.h"

namespace strata::ops::onednn {

using Md = dnnl::memory::desc;
using Dims = dnnl::memory::dims;
using Tag = dnnl::memory::format_tag;
using Alg = dnnl::algorithm;

const dnnl::engine& CpuEngine();

// Unimplemented with the reason: the node is left to the next kernel (STRATA_VERBOSE=dispatch prints the reason).
template <typename... Args>
Status Decline(const Args&... args) {
  return UnimplementedError(args...);
}

// A oneDNN error at plan time: out of memory gives ResourceExhausted; anything else declines the node (Unimplemented)
// so that the reference kernel runs instead.
Status FromDnnlError(const dnnl::error& e, std::string_view what);

// Runs plan-time code that calls oneDNN's C++ API; exceptions become Status.
template <typename F>
auto Guard(std::string_view what, F&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const dnnl::error& e) {
    return FromDnnlError(e, what);
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError(what, ": out of memory");
  } catch (const std::exception& e) {
    return InternalError(what, ": ", e.what());
  }
}

// Primitive attributes with the scratchpad in user mode (every primitive a PrimitiveKernel runs must use them).
dnnl::primitive_attr Attr();
dnnl::primitive_attr Attr(const dnnl::post_ops& po);

// ---- shapes and memory descriptors ----

Dims ToDims(const Shape& s);
// float32 (or `dt`), row-major; a scalar is described as [1].
Md PlainMd(const Shape& s);
Md PlainMd(const Dims& d, dnnl::memory::data_type dt = dnnl::memory::data_type::f32);
// float32 (or `dt`) with the layout left to the primitive.
Md AnyMd(const Dims& d, dnnl::memory::data_type dt = dnnl::memory::data_type::f32);
// Activations of strata.ChannelsLast nodes: a 4-D [N, H, W, C] tensor seen as oneDNN's NCHW dims in nhwc layout.
Shape NhwcToNchw(const Shape& nhwc);
// The memory of an activation with NCHW shape `nchw`: plain, or nhwc when `nhwc` (the tensor is then [N, H, W, C]);
// float32 unless `dt` says otherwise.
Md ActivationMd(const Shape& nchw, bool nhwc, dnnl::memory::data_type dt = dnnl::memory::data_type::f32);
// oneDNN's data type for a float32 or bfloat16 tensor.
dnnl::memory::data_type FloatType(DType t);
// The concrete shape of a value at plan time, or Unimplemented.
StatusOr<Shape> KnownShape(const ValueType& vt, std::string_view what);
// Declines unless every present input and output (except the inputs listed in `skip`: axes, exponents) is float32
// with a fully known, non-empty shape.
Status RequireFloat32(const KernelInit& init, std::initializer_list<int> skip = {});
// RequireFloat32, except that the inputs listed in `bf16_inputs` and output 0 (with `bf16_output`) may also be
// bfloat16: the activations a kernel that computes in bfloat16 reads and writes in that type (Plan::StoreBf16).
// `*any_bf16` says whether one of them is.
Status RequireFloat32OrBf16(const KernelInit& init, std::initializer_list<int> bf16_inputs, bool bf16_output,
                            bool* any_bf16);
// Whether a float32 tensor holds a NaN (with `nonfinite`: a NaN or an infinity).
bool HasNaN(const Tensor& t, bool nonfinite);

// Whether oneDNN fell back on its reference (scalar, "ref:...") implementation for a primitive descriptor: for
// convolutions and matmuls strata's own reference kernels are faster, and a fused primitive is better split.
bool IsRefImpl(const dnnl::primitive_desc_base& pd);

// Whether oneDNN's name of the implementation behind `pd` ("jit_1x1:avx512_core") starts with `prefix`.
bool ImplStartsWith(const dnnl::primitive_desc_base& pd, std::string_view prefix);

// Whether the implementations behind `a` and `b` are for the same ISA (the part of their names after ':').
bool SameImplIsa(const dnnl::primitive_desc_base& a, const dnnl::primitive_desc_base& b);

// The primitive descriptor `make_pd()` returns, moved on (next_impl) to oneDNN's first implementation whose name starts
// with `prefix` when it has one for the same ISA as oneDNN's first choice that takes the problem (never a narrower
// one: jit_1x1:avx2 instead of brgconv_1x1:avx512_core); otherwise oneDNN's own first choice. For the few shapes
// where oneDNN's order of implementations is not the fastest on this CPU (the rules and their figures:
// docs/engine.md, "Implementation choices").
template <typename MakePd>
auto PreferImpl(MakePd&& make_pd, std::string_view prefix) -> decltype(make_pd()) {
  auto pd = make_pd();
  if (ImplStartsWith(pd, prefix)) return pd;
  auto probe = make_pd();  // next_impl moves the descriptor it is called on: keep `pd` as oneDNN's first choice
  while (probe.next_impl())
    if (ImplStartsWith(probe, prefix) && SameImplIsa(probe, pd)) return probe;
  return pd;
}

// ---- bfloat16 (SessionOptions::precision) ----

// The kernel name (Kernel::name, Plan::Describe, STRATA_VERBOSE=dispatch/profile) of a convolution or matmul that
// computes in bfloat16.
inline constexpr const char* kBf16KernelName = "dnnl-bf16";

// Whether this CPU runs oneDNN's native bfloat16 kernels (avx512_bf16: oneDNN's ISA avx512_core_bf16 or above, as
// DNNL_MAX_CPU_ISA allows). Without them oneDNN offers only its reference or an emulated bfloat16, both slower than
// float32.
bool NativeBf16();
// Whether a kernel built for `init` should compute in bfloat16: precision bf16 was asked for and NativeBf16(). When it
// was asked for on a CPU without native kernels, warns once per process that float32 runs instead.
bool UseBf16(const KernelInit& init);
// Logs (STRATA_VERBOSE=dispatch) why a kernel asked to compute in bfloat16 runs float32: `why` is the decline of its
// bfloat16 build (oneDNN has only its reference bfloat16 implementation for it, say).
void LogStaysFloat32(const KernelInit& init, const Status& why);

// ---- PrimitiveKernel ----

class PrimitiveKernel final : public Kernel, public InplaceKernel, public Bf16InputKernel, public Bf16OutputKernel {
 public:
  // Records the node's input and output types; the kernel is then built with the calls below.
  explicit PrimitiveKernel(const KernelInit& init, std::string name = "dnnl");

  // Buffers the primitives read and write (ids are indexes into buffers_).
  // Node input i in the layout `want`: a constant is reordered once now; a runtime value is bound per run (and
  // reordered into a temporary first when `want` differs from its plain layout). `user` overrides the plain
  // description of the input (e.g. a reshaped view of it).
  int Input(int i, const Md& want, const Md* user = nullptr);
  // A constant buffer built at plan time (folded weights, a scaled bias): `data` laid out as `user`, reordered into
  // `want` (memory the kernel owns).
  int Constant(const Md& user, const void* data, const Md& want);
  int Constant(dnnl::memory mem);
  // The value of node input i when it is a constant (known at plan time), else null.
  const Tensor* constant_input(int i) const {
    return i < static_cast<int>(input_values_.size()) ? input_values_[i] : nullptr;
  }
  const Shape& input_shape(int i) const { return input_shapes_[i]; }
  // Node output j, produced by the next primitive in layout `produced`; when that is not the plain layout of `shape`
  // the primitive writes a temporary that is reordered into the output after it.
  int Output(int j, const Shape& shape, const Md& produced, const Md* user = nullptr);
  // A per-run temporary.
  int Temp(const Md& md);
  // Copies node input i into buffer `dst` (a reorder) before the next primitive (the sum post-op's accumulator).
  void CopyInputTo(int i, int dst, const Md* user = nullptr);

  // Runs the op's reference kernel instead when one of these (runtime) inputs holds a NaN, or with `nonfinite` also
  // an infinity: for primitives whose NaN handling differs from the reference kernel's (oneDNN's max, min and clip
  // drop NaN). Costs one read of those inputs per run. A constant input is checked now (declines when it has one).
  Status FallBackOnNaN(std::vector<int> inputs, bool nonfinite = false);

  // Appends a primitive with its arguments (DNNL_ARG_* -> buffer id); `pd` supplies the scratchpad size.
  void Add(const dnnl::primitive& p, const dnnl::primitive_desc_base& pd, std::vector<std::pair<int, int>> args);

  // Ends building: sizes the scratch arena and creates the first execution slot. Call inside Guard.
  void Finalize();

  Status Run(KernelContext& ctx) const override;
  std::string_view name() const override { return name_; }
  bool computes_bf16() const override { return name_ == kBf16KernelName; }
  // A float32 kernel whose node another kernel of the op also computes with bfloat16 activations (Plan::StoreBf16):
  // input i (bit i of `inputs`) and, with `output`, output 0 may then be stored in bfloat16 (ops/bf16_output.h).
  void set_bf16_variant(uint32_t inputs, bool output) {
    bf16_inputs_ = inputs;
    bf16_output_ = output;
  }
  bool reads_bf16(int input) const override { return input >= 0 && input < 32 && ((bf16_inputs_ >> input) & 1u); }
  bool writes_bf16() const override { return bf16_output_; }
  void set_name(std::string name) { name_ = std::move(name); }
  size_t scratch_bytes() const override { return arena_bytes_; }
  int inplace_input() const override { return inplace_input_; }
  // "brgconv:avx512_core,..." (the implementations oneDNN chose), for debugging.
  const std::string& impl_info() const { return impl_info_; }
  // The implementation of every step a run executes, reorders included, in order ("jit:uni,jit_wino_4x3:avx512_core,
  // ..."; "memcpy" for a plain copy), for tests and debugging.
  std::string StepImpls() const;
  // Runs the primitives on the calling thread alone (set by BuildKernel for small work).
  void set_serial(bool serial) { serial_ = serial; }

 private:
  enum class Kind { kInput, kOutput, kConstant, kTemp };
  struct Buffer {
    Kind kind;
    Md md;
    int index = -1;           // node input/output index
    dnnl::memory constant;    // kConstant
    size_t arena_offset = 0;  // kTemp
  };
  struct Step {
    dnnl::primitive prim;
    std::vector<std::pair<int, int>> args;  // DNNL_ARG_* -> buffer id
    Md scratchpad;
    // CopyInputTo: node input `copy_input` into buffer `copy_dst`, skipped when both are the same memory (an
    // in-place plan); a plain memcpy of `copy_bytes` when the layouts are equal (prim is then empty).
    int copy_input = -1;
    int copy_dst = -1;
    size_t copy_bytes = 0;
  };
  struct Slot {
    std::vector<dnnl::memory> mems;  // per buffer (constants share the kernel's memory)
    std::vector<std::vector<dnnl_exec_arg_t>> args;
    std::vector<dnnl::memory> scratch;  // per step, may be empty
  };

  std::unique_ptr<Slot> MakeSlot() const;
  int AddBuffer(Buffer b);

  std::string name_;
  std::string impl_info_;
  ComputeFn reference_ = nullptr;
  bool serial_ = false;
  int inplace_input_ = -1;
  uint32_t bf16_inputs_ = 0;
  bool bf16_output_ = false;
  std::vector<int> nan_guarded_;
  bool nan_guard_nonfinite_ = false;
  std::vector<Shape> input_shapes_;  // empty Shape for omitted inputs
  std::vector<DType> input_dtypes_;
  std::vector<bool> input_present_;
  std::vector<const Tensor*> input_values_;
  std::vector<Shape> output_shapes_;
  std::vector<DType> output_dtypes_;
  std::vector<bool> output_bound_;
  std::vector<Buffer> buffers_;
  std::vector<Step> steps_;
  std::vector<Step> pending_after_;  // output reorders that follow the next primitive
  size_t temp_bytes_ = 0;
  size_t arena_bytes_ = 0;
  mutable std::mutex pool_mu_;
  mutable std::vector<std::unique_ptr<Slot>> pool_;
};

// Sets the calling thread's OpenMP thread count for a scope (oneDNN's OpenMP runtime reads it when it creates and
// runs primitives).
class ScopedThreads {
 public:
  explicit ScopedThreads(bool serial);
  ~ScopedThreads();
  ScopedThreads(const ScopedThreads&) = delete;
  ScopedThreads& operator=(const ScopedThreads&) = delete;

 private:
  int saved_ = 0;
};

// Whether a node of this cost should run on one thread: below about 20 microseconds of work an OpenMP fork/join
// costs more than it saves, and on a loaded machine the second thread may not be scheduled for milliseconds.
// `flops` is the arithmetic (0 for memory-bound ops); the elements read and written count too.
bool SmallWork(const KernelInit& init, int64_t flops);

// Builds a PrimitiveKernel inside Guard: `build(kernel)` returns Status (a decline or an error). Small work (see
// SmallWork) is built and run single-threaded.
template <typename F>
StatusOr<std::unique_ptr<Kernel>> BuildKernel(const KernelInit& init, std::string_view what, F&& build,
                                              int64_t flops = 0) {
  return Guard(what, [&]() -> StatusOr<std::unique_ptr<Kernel>> {
    const bool serial = SmallWork(init, flops);
    ScopedThreads threads(serial);
    auto k = std::make_unique<PrimitiveKernel>(init);
    k->set_serial(serial);
    STRATA_RETURN_IF_ERROR(build(*k));
    k->Finalize();
    return std::unique_ptr<Kernel>(std::move(k));
  });
}

// ---- eltwise (activations as primitives and as post-ops) ----

struct EltwiseSpec {
  Alg alg = Alg::eltwise_relu;
  float alpha = 0;
  float beta = 0;
  // A second eltwise applied after the first (HardSigmoid-like compositions), when `chained` is set.
  bool chained = false;
  Alg alg2 = Alg::eltwise_relu;
  float alpha2 = 0;
  float beta2 = 0;
  // oneDNN's result differs from the reference for NaN inputs (clip maps NaN to its lower bound).
  bool drops_nan = false;
};

// Maps an activation (an ONNX op type with its alpha/beta resolved as ops/defs/fused/activation.h defines them) to
// oneDNN eltwise algorithms, or declines when oneDNN cannot compute it.
StatusOr<EltwiseSpec> EltwiseFor(std::string_view op, float alpha, float beta);
// Appends the activation to post-ops.
void AppendEltwise(dnnl::post_ops* po, const EltwiseSpec& e);

// ---- kernels strata.ChannelsLast reuses (channels_last.cc) ----

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastConv(const KernelInit& init, bool fused);
StatusOr<std::unique_ptr<Kernel>> CreatePoolFor(const KernelInit& init, std::string_view op, bool nhwc);
StatusOr<std::unique_ptr<Kernel>> CreateBatchNormFor(const KernelInit& init, bool nhwc);
StatusOr<std::unique_ptr<Kernel>> CreateQuantizedConvFor(const KernelInit& init, bool nhwc);

}  // namespace strata::ops::onednn
