#include "ops/dnnl/dnnl_common.h"

#include <omp.h>
#include <strings.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/logging.h"
#include "ops/compute_dtype.h"
#include "ops/dnnl/bf16_probe.h"

namespace strata::ops::onednn {
namespace {

constexpr size_t kAlign = 64;

size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// One stream per thread: a CPU stream is cheap, but not meant to be shared by threads that execute at once.
dnnl_stream_t ThreadStream() {
  struct Holder {
    dnnl_stream_t s = nullptr;
    ~Holder() {
      if (s != nullptr) dnnl_stream_destroy(s);
    }
  };
  static thread_local Holder h;
  if (h.s == nullptr && dnnl_stream_create(&h.s, CpuEngine().get(), dnnl_stream_default_flags) != dnnl_success)
    h.s = nullptr;
  return h.s;
}

}  // namespace

dnnl::primitive_attr Attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::primitive_attr Attr(const dnnl::post_ops& po) {
  dnnl::primitive_attr attr = Attr();
  attr.set_post_ops(po);
  return attr;
}

const dnnl::engine& CpuEngine() {
  static const dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

Status FromDnnlError(const dnnl::error& e, std::string_view what) {
  if (e.status == dnnl_out_of_memory)
    return ResourceExhaustedError(what, ": oneDNN ran out of memory (", e.what(), ")");
  const char* kind = e.status == dnnl_unimplemented ? "has no implementation" : "rejected the descriptor";
  return Decline("oneDNN ", kind, " for ", what, " (", e.what(), ")");
}

// ---- shapes and descriptors ----

Dims ToDims(const Shape& s) {
  if (s.rank() == 0) return {1};
  return Dims(s.begin(), s.end());
}

Md PlainMd(const Dims& d, dnnl::memory::data_type dt) {
  Dims strides(d.size(), 1);
  for (int i = static_cast<int>(d.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * d[i + 1];
  return Md(d, dt, strides);
}

Md PlainMd(const Shape& s) { return PlainMd(ToDims(s)); }

Md AnyMd(const Dims& d, dnnl::memory::data_type dt) { return Md(d, dt, Tag::any); }

Shape NhwcToNchw(const Shape& s) { return s.rank() == 4 ? Shape{s[0], s[3], s[1], s[2]} : s; }

Md ActivationMd(const Shape& nchw, bool nhwc, dnnl::memory::data_type dt) {
  return nhwc ? Md(ToDims(nchw), dt, Tag::nhwc) : PlainMd(ToDims(nchw), dt);
}

dnnl::memory::data_type FloatType(DType t) {
  return t == DType::kBFloat16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
}

StatusOr<Shape> KnownShape(const ValueType& vt, std::string_view what) {
  if (!vt.shape.IsFullyKnown()) return Decline(what, " has shape ", vt.shape.ToString(), " (not known at plan time)");
  return vt.shape.ToShape();
}

namespace {

Status CheckOperand(const ValueType& vt, std::string_view what, size_t i, bool bf16_ok, bool* is_bf16) {
  if (vt.dtype == DType::kUndefined) return Status::OK();  // omitted
  const bool bf16 = bf16_ok && vt.dtype == DType::kBFloat16;
  if (vt.dtype != DType::kFloat32 && !bf16)
    return Decline(what, " ", i, " is ", DTypeName(vt.dtype),
                   bf16_ok ? " (only float32 or bfloat16 here)" : " (only float32 here)");
  if (!vt.shape.IsFullyKnown()) return Decline(what, " ", i, " has shape ", vt.shape.ToString(), " (not known)");
  const Shape s = vt.shape.ToShape();
  if (s.NumElements() == 0) return Decline(what, " ", i, " is empty ", s.ToString(), " (left to the reference)");
  if (s.rank() > DNNL_MAX_NDIMS) return Decline(what, " ", i, " has rank ", s.rank(), " (oneDNN: at most 12)");
  *is_bf16 = *is_bf16 || bf16;
  return Status::OK();
}

}  // namespace

Status RequireFloat32(const KernelInit& init, std::initializer_list<int> skip) {
  bool unused = false;
  for (size_t i = 0; i < init.inputs.size(); ++i) {
    const bool skipped = std::find(skip.begin(), skip.end(), static_cast<int>(i)) != skip.end();
    if (init.node.has_input(static_cast<int>(i)) && !skipped)
      STRATA_RETURN_IF_ERROR(CheckOperand(init.inputs[i], "input", i, false, &unused));
  }
  for (size_t i = 0; i < init.outputs.size(); ++i)
    if (init.node.has_output(static_cast<int>(i)))
      STRATA_RETURN_IF_ERROR(CheckOperand(init.outputs[i], "output", i, false, &unused));
  return Status::OK();
}

Status RequireFloat32OrBf16(const KernelInit& init, std::initializer_list<int> bf16_inputs, bool bf16_output,
                            bool* any_bf16) {
  *any_bf16 = false;
  for (size_t i = 0; i < init.inputs.size(); ++i) {
    const bool bf16_ok = std::find(bf16_inputs.begin(), bf16_inputs.end(), static_cast<int>(i)) != bf16_inputs.end();
    if (init.node.has_input(static_cast<int>(i)))
      STRATA_RETURN_IF_ERROR(CheckOperand(init.inputs[i], "input", i, bf16_ok, any_bf16));
  }
  for (size_t i = 0; i < init.outputs.size(); ++i)
    if (init.node.has_output(static_cast<int>(i)))
      STRATA_RETURN_IF_ERROR(CheckOperand(init.outputs[i], "output", i, bf16_output && i == 0, any_bf16));
  return Status::OK();
}

bool HasNaN(const Tensor& t, bool nonfinite) {
  const uint32_t* p = static_cast<const uint32_t*>(t.raw_data());
  const int64_t n = t.num_elements();
  constexpr uint32_t kExp = 0x7f800000u, kMant = 0x007fffffu;
  int found = 0;
  // The scan runs before every guarded primitive, on activations of up to tens of MB; on one thread it was about a
  // seventh of mobilenet_v2's batch-32 run while the other thread waited. Large tensors are split across the
  // intra-op threads.
  const int threads = n >= (int64_t{1} << 17) && !omp_in_parallel() ? omp_get_max_threads() : 1;
  if (nonfinite) {
#pragma omp parallel for simd reduction(| : found) num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; ++i) found |= (p[i] & kExp) == kExp;
  } else {
#pragma omp parallel for simd reduction(| : found) num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; ++i) found |= ((p[i] & kExp) == kExp) & ((p[i] & kMant) != 0);
  }
  return found != 0;
}

bool IsRefImpl(const dnnl::primitive_desc_base& pd) {
  const char* info = pd.impl_info_str();
  return info != nullptr && std::strncmp(info, "ref", 3) == 0;
}

bool ImplStartsWith(const dnnl::primitive_desc_base& pd, std::string_view prefix) {
  const char* info = pd.impl_info_str();
  return info != nullptr && std::string_view(info).substr(0, prefix.size()) == prefix;
}

bool SameImplIsa(const dnnl::primitive_desc_base& a, const dnnl::primitive_desc_base& b) {
  auto isa = [](const dnnl::primitive_desc_base& pd) {
    const char* info = pd.impl_info_str();
    const std::string_view name = info != nullptr ? info : "";
    const size_t colon = name.find(':');
    return colon == std::string_view::npos ? std::string_view() : name.substr(colon + 1);
  };
  return isa(a) == isa(b);
}

// ---- bfloat16 ----

bool NativeBf16() {
  static const bool native = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
    return (isa & bf16) == bf16;
  }();
  return native;
}

bool UseBf16(const KernelInit& init) {
  // A dtype policy's per-node attribute (ops/compute_dtype.h) overrides the session's precision.
  const Attribute* a = init.node.FindAttr(kComputeDtypeAttr);
  const bool policy = a != nullptr && a->type() == Attribute::Type::kString;
  const bool want = policy ? a->s() == kComputeBFloat16 : init.precision == graph::Precision::kBf16;
  if (!want) return false;
  if (NativeBf16()) {
    static std::once_flag probed;
    std::call_once(probed, [policy] {
      const char* env = std::getenv("STRATA_BF16_PROBE");
      if (env != nullptr && std::strcmp(env, "0") == 0) return;
      StatusOr<Bf16Probe> probe = ProbeBf16Speed();
      if (!probe.ok()) {
        LogWarning(probe.status().message());
        return;
      }
      const std::string warning = Bf16SlowerWarning(*probe, policy ? "mixed_bfloat16" : "--precision bf16");
      if (!warning.empty()) LogWarning(warning);
    });
    return true;
  }
  static std::once_flag warned, warned_policy;
  if (policy) {
    std::call_once(warned_policy, [] {
      LogWarning("mixed_bfloat16: this CPU has no native bfloat16 kernels (oneDNN's avx512_core_bf16 ISA, which "
                 "needs avx512_bf16), so convolutions and matmuls train in float32");
    });
  } else {
    std::call_once(warned, [] {
      LogWarning("--precision bf16: this CPU has no native bfloat16 kernels (oneDNN's avx512_core_bf16 ISA, which "
                 "needs avx512_bf16), so the model runs in float32");
    });
  }
  return false;
}

void LogStaysFloat32(const KernelInit& init, const Status& why) {
  if (VerboseEnabled("dispatch")) LogInfo("dispatch: ", init.node.Describe(), ": stays float32: ", why.message());
}

// ---- threads ----

ScopedThreads::ScopedThreads(bool serial) : saved_(serial ? omp_get_max_threads() : 0) {
  if (saved_ > 1) omp_set_num_threads(1);
}

ScopedThreads::~ScopedThreads() {
  if (saved_ > 1) omp_set_num_threads(saved_);
}

// Work (estimated ns) below which a node runs on the calling thread: 20 us when OpenMP's idle threads spin, 200 us
// when they sleep (OMP_WAIT_POLICY=passive: every parallel region then pays a futex wake-up and the sleeper's
// scheduling delay, tens of microseconds, more on a busy machine). STRATA_SERIAL_US overrides both.
double SerialThresholdNs() {
  static const double ns = [] {
    if (const char* v = std::getenv("STRATA_SERIAL_US")) {
      char* end = nullptr;
      const double us = std::strtod(v, &end);
      if (end != v && us >= 0) return us * 1000.0;
    }
    const char* policy = std::getenv("OMP_WAIT_POLICY");
    const bool passive = policy != nullptr && strcasecmp(policy, "passive") == 0;
    return passive ? 200000.0 : 20000.0;
  }();
  return ns;
}

bool SmallWork(const KernelInit& init, int64_t flops) {
  constexpr double kNsPerElement = 0.5, kNsPerFlop = 0.02;
  const double kSerialNs = SerialThresholdNs();
  double elements = 0;
  for (const ValueType& vt : init.inputs)
    if (vt.shape.IsFullyKnown() && !vt.has_value()) elements += static_cast<double>(vt.shape.ToShape().NumElements());
  for (const ValueType& vt : init.outputs)
    if (vt.shape.IsFullyKnown()) elements += static_cast<double>(vt.shape.ToShape().NumElements());
  return elements * kNsPerElement + static_cast<double>(flops) * kNsPerFlop < kSerialNs;
}

// ---- PrimitiveKernel: building ----

PrimitiveKernel::PrimitiveKernel(const KernelInit& init, std::string name) : name_(std::move(name)) {
  if (const OpSchema* s = OpRegistry::Global().Find(init.node.domain, init.node.op_type)) reference_ = s->reference;
  for (size_t i = 0; i < init.inputs.size(); ++i) {
    const ValueType& vt = init.inputs[i];
    const bool present = init.node.has_input(static_cast<int>(i)) && vt.shape.IsFullyKnown();
    input_present_.push_back(present);
    input_shapes_.push_back(present ? vt.shape.ToShape() : Shape());
    input_dtypes_.push_back(vt.dtype);
    input_values_.push_back(present && vt.has_value() ? vt.value : nullptr);
  }
  output_shapes_.resize(init.outputs.size());
  // float32 unless inference says otherwise (the int8 kernels write uint8/int8).
  for (const ValueType& vt : init.outputs)
    output_dtypes_.push_back(vt.dtype == DType::kUndefined ? DType::kFloat32 : vt.dtype);
  output_bound_.assign(init.outputs.size(), false);
}

int PrimitiveKernel::AddBuffer(Buffer b) {
  buffers_.push_back(std::move(b));
  return static_cast<int>(buffers_.size()) - 1;
}

int PrimitiveKernel::Constant(dnnl::memory mem) {
  Buffer b{Kind::kConstant, mem.get_desc()};
  b.constant = std::move(mem);
  return AddBuffer(std::move(b));
}

int PrimitiveKernel::Constant(const Md& user, const void* data, const Md& want) {
  dnnl::memory src(user, CpuEngine(), const_cast<void*>(data));
  dnnl::memory dst(want, CpuEngine());
  dnnl::stream s(CpuEngine());
  dnnl::reorder(src, dst).execute(s, src, dst);
  s.wait();
  return Constant(std::move(dst));
}

int PrimitiveKernel::Temp(const Md& md) {
  Buffer b{Kind::kTemp, md};
  b.arena_offset = temp_bytes_;
  temp_bytes_ += AlignUp(md.get_size());
  return AddBuffer(std::move(b));
}

int PrimitiveKernel::Input(int i, const Md& want, const Md* user) {
  STRATA_CHECK(i < static_cast<int>(input_present_.size()) && input_present_[i], "dnnl: input ", i, " is not bound");
  const Md user_md = user != nullptr ? *user : PlainMd(input_shapes_[i]);
  // A constant (weights): reorder once into the layout the primitive wants, into memory the kernel owns.
  if (input_values_[i] != nullptr) return Constant(user_md, input_values_[i]->raw_data(), want);
  const int b = AddBuffer(Buffer{Kind::kInput, user_md, i});
  if (want == user_md) return b;
  const int t = Temp(want);
  dnnl::reorder::primitive_desc pd(CpuEngine(), user_md, CpuEngine(), want, Attr());
  steps_.push_back(Step{dnnl::reorder(pd), {{DNNL_ARG_SRC, b}, {DNNL_ARG_DST, t}}, pd.scratchpad_desc()});
  return t;
}

void PrimitiveKernel::CopyInputTo(int i, int dst, const Md* user) {
  const Md user_md = user != nullptr ? *user : PlainMd(input_shapes_[i]);
  const int b = AddBuffer(Buffer{Kind::kInput, user_md, i});
  Step step;
  if (user_md == buffers_[dst].md) {
    // Same layout: a memcpy (oneDNN's reorder between equal non-plain layouts is its slow generic one), or nothing
    // when the plan put the output over the input (the output takes over the input's memory).
    step.copy_bytes = user_md.get_size();
    if (buffers_[dst].kind == Kind::kOutput && buffers_[dst].index == 0) inplace_input_ = i;
  } else {
    dnnl::reorder::primitive_desc pd(CpuEngine(), user_md, CpuEngine(), buffers_[dst].md, Attr());
    step.prim = dnnl::reorder(pd);
    step.args = {{DNNL_ARG_SRC, b}, {DNNL_ARG_DST, dst}};
    step.scratchpad = pd.scratchpad_desc();
  }
  step.copy_input = i;
  step.copy_dst = dst;
  steps_.push_back(std::move(step));
}

int PrimitiveKernel::Output(int j, const Shape& shape, const Md& produced, const Md* user) {
  STRATA_CHECK(j < static_cast<int>(output_shapes_.size()), "dnnl: output ", j, " out of range");
  output_shapes_[j] = shape;
  output_bound_[j] = true;
  const Md user_md = user != nullptr ? *user : PlainMd(shape);
  const int b = AddBuffer(Buffer{Kind::kOutput, user_md, j});
  if (produced == user_md) return b;
  const int t = Temp(produced);
  dnnl::reorder::primitive_desc pd(CpuEngine(), produced, CpuEngine(), user_md, Attr());
  pending_after_.push_back(Step{dnnl::reorder(pd), {{DNNL_ARG_SRC, t}, {DNNL_ARG_DST, b}}, pd.scratchpad_desc()});
  return t;
}

Status PrimitiveKernel::FallBackOnNaN(std::vector<int> inputs, bool nonfinite) {
  STRATA_CHECK(reference_ != nullptr, "dnnl: no reference kernel to fall back on");
  for (int i : inputs) {
    if (i >= static_cast<int>(input_present_.size()) || !input_present_[i]) continue;
    if (input_values_[i] == nullptr) {
      nan_guarded_.push_back(i);
    } else if (input_values_[i]->dtype() == DType::kFloat32 && HasNaN(*input_values_[i], nonfinite)) {
      return Decline("constant input ", i, " holds ", nonfinite ? "a NaN or an infinity" : "a NaN");
    }
  }
  nan_guard_nonfinite_ = nonfinite;
  return Status::OK();
}

void PrimitiveKernel::Add(const dnnl::primitive& p, const dnnl::primitive_desc_base& pd,
                          std::vector<std::pair<int, int>> args) {
  STRATA_CHECK(pd.get_primitive_attr().get_scratchpad_mode() == dnnl::scratchpad_mode::user,
               "dnnl: primitives must be created with Attr() (user scratchpad)");
  steps_.push_back(Step{p, std::move(args), pd.scratchpad_desc()});
  for (Step& s : pending_after_) steps_.push_back(std::move(s));
  pending_after_.clear();
  const char* info = pd.impl_info_str();
  if (info != nullptr) impl_info_ += StrCat(impl_info_.empty() ? "" : ",", info);
}

std::string PrimitiveKernel::StepImpls() const {
  std::string out;
  for (const Step& step : steps_) {
    const char* info = nullptr;
    if (step.prim) {
      const_dnnl_primitive_desc_t pd = nullptr;
      if (dnnl_primitive_get_primitive_desc(step.prim.get(), &pd) == dnnl_success && pd != nullptr)
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &info);
    }
    out += StrCat(out.empty() ? "" : ",", info != nullptr ? info : (step.prim ? "?" : "memcpy"));
  }
  return out;
}

void PrimitiveKernel::Finalize() {
  STRATA_CHECK(pending_after_.empty(), "dnnl: an output was bound with no primitive after it");
  size_t scratch = 0;
  for (const Step& s : steps_) scratch = std::max(scratch, s.scratchpad.get_size());
  arena_bytes_ = temp_bytes_ + AlignUp(scratch);
  pool_.push_back(MakeSlot());  // the first run allocates nothing
}

std::unique_ptr<PrimitiveKernel::Slot> PrimitiveKernel::MakeSlot() const {
  // Inputs, outputs, temporaries and scratchpads get their handles per run.
  auto slot = std::make_unique<Slot>();
  for (const Buffer& b : buffers_) {
    if (b.kind == Kind::kConstant) {
      slot->mems.push_back(b.constant);
    } else {
      slot->mems.emplace_back(b.md, CpuEngine(), static_cast<void*>(DNNL_MEMORY_NONE));
    }
  }
  for (const Step& s : steps_) {
    std::vector<dnnl_exec_arg_t> args;
    for (const auto& [arg, buf] : s.args) args.push_back({arg, slot->mems[buf].get()});
    if (s.scratchpad.get_size() > 0) {
      slot->scratch.emplace_back(s.scratchpad, CpuEngine(), static_cast<void*>(DNNL_MEMORY_NONE));
      args.push_back({DNNL_ARG_SCRATCHPAD, slot->scratch.back().get()});
    } else {
      slot->scratch.emplace_back();
    }
    slot->args.push_back(std::move(args));
  }
  return slot;
}

// ---- PrimitiveKernel: running ----

Status PrimitiveKernel::Run(KernelContext& ctx) const {
  for (size_t i = 0; i < input_present_.size(); ++i) {
    if (!input_present_[i]) continue;
    if (!ctx.has_input(static_cast<int>(i)) || ctx.input(i).dtype() != input_dtypes_[i] ||
        ctx.input(i).shape() != input_shapes_[i])
      return InternalError(ctx.node().Describe(), ": the dnnl kernel was prepared for input ", i, " ",
                           DTypeName(input_dtypes_[i]), input_shapes_[i].ToString(), ", got ",
                           ctx.has_input(static_cast<int>(i)) ? ctx.input(i).TypeString() : "none");
  }
  for (int i : nan_guarded_)
    if (HasNaN(ctx.input(i), nan_guard_nonfinite_)) return reference_(ctx);
  void* outs[8] = {};
  STRATA_CHECK(output_shapes_.size() <= 8, "dnnl: too many outputs");
  for (size_t j = 0; j < output_shapes_.size(); ++j) {
    if (!output_bound_[j]) continue;
    STRATA_ASSIGN_OR_RETURN(Tensor * t, ctx.Output(static_cast<int>(j), output_dtypes_[j], output_shapes_[j]));
    outs[j] = t->raw_data();
  }
  char* scratch = nullptr;
  if (arena_bytes_ > 0) {
    STRATA_ASSIGN_OR_RETURN(void* p, ctx.Scratch(arena_bytes_));
    scratch = static_cast<char*>(p);
  }
  dnnl_stream_t stream = ThreadStream();
  if (stream == nullptr) return InternalError(ctx.node().Describe(), ": could not create a oneDNN stream");
  ScopedThreads threads(serial_);

  std::unique_ptr<Slot> slot;
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!pool_.empty()) {
      slot = std::move(pool_.back());
      pool_.pop_back();
    }
  }
  if (!slot) {
    try {
      slot = MakeSlot();
    } catch (const std::exception& e) {
      return ResourceExhaustedError(ctx.node().Describe(), ": no memory for a oneDNN execution slot");
    }
  }
  Status status;
  for (size_t b = 0; b < buffers_.size() && status.ok(); ++b) {
    void* handle = nullptr;
    if (buffers_[b].kind == Kind::kInput) {
      handle = const_cast<void*>(ctx.input(buffers_[b].index).raw_data());
    } else if (buffers_[b].kind == Kind::kOutput) {
      handle = outs[buffers_[b].index];
    } else if (buffers_[b].kind == Kind::kTemp) {
      handle = scratch + buffers_[b].arena_offset;
    } else {
      continue;
    }
    if (dnnl_memory_set_data_handle_v2(slot->mems[b].get(), handle, nullptr) != dnnl_success)
      status = InternalError(ctx.node().Describe(), ": oneDNN refused a data handle");
  }
  for (size_t i = 0; i < steps_.size() && status.ok(); ++i) {
    if (!slot->scratch[i]) continue;
    if (dnnl_memory_set_data_handle_v2(slot->scratch[i].get(), scratch + temp_bytes_, nullptr) != dnnl_success)
      status = InternalError(ctx.node().Describe(), ": oneDNN refused a scratchpad handle");
  }
  for (size_t i = 0; i < steps_.size() && status.ok(); ++i) {
    const Step& step = steps_[i];
    if (step.copy_input >= 0) {
      const void* src = ctx.input(step.copy_input).raw_data();
      void* dst = nullptr;
      dnnl_memory_get_data_handle(slot->mems[step.copy_dst].get(), &dst);
      if (src == dst) continue;  // in place: the output already holds the input
      if (step.copy_bytes > 0) {
        std::memcpy(dst, src, step.copy_bytes);
        continue;
      }
    }
    const auto& args = slot->args[i];
    const dnnl_status_t s =
        dnnl_primitive_execute(steps_[i].prim.get(), stream, static_cast<int>(args.size()), args.data());
    if (s != dnnl_success)
      status =
          InternalError(ctx.node().Describe(), ": oneDNN primitive ", i, " failed with status ", static_cast<int>(s));
  }
  if (status.ok() && dnnl_stream_wait(stream) != dnnl_success)
    status = InternalError(ctx.node().Describe(), ": oneDNN stream wait failed");
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    pool_.push_back(std::move(slot));
  }
  return status;
}

// ---- eltwise ----

StatusOr<EltwiseSpec> EltwiseFor(std::string_view op, float alpha, float beta) {
  EltwiseSpec e;
  e.alpha = alpha;
  e.beta = beta;
  if (op == "Relu") {
    e.alg = Alg::eltwise_relu;
    e.alpha = 0;
  } else if (op == "LeakyRelu") {
    e.alg = Alg::eltwise_relu;
  } else if (op == "Elu") {
    e.alg = Alg::eltwise_elu;
  } else if (op == "Selu") {  // gamma * elu_alpha(x); alpha = alpha, beta = gamma
    e = EltwiseSpec{Alg::eltwise_elu, alpha, 0, true, Alg::eltwise_linear, beta, 0};
  } else if (op == "Sigmoid") {
    e.alg = Alg::eltwise_logistic;
  } else if (op == "Tanh") {
    e.alg = Alg::eltwise_tanh;
  } else if (op == "Exp") {
    e.alg = Alg::eltwise_exp;
  } else if (op == "Log") {
    e.alg = Alg::eltwise_log;
  } else if (op == "Sqrt") {
    e.alg = Alg::eltwise_sqrt;
  } else if (op == "Abs") {
    e.alg = Alg::eltwise_abs;
  } else if (op == "Neg") {
    e = EltwiseSpec{Alg::eltwise_linear, -1, 0};
  } else if (op == "Clip") {  // alpha = min, beta = max
    e.alg = Alg::eltwise_clip_v2;
  } else if (op == "HardSigmoid") {  // max(0, min(1, alpha x + beta))
    e = EltwiseSpec{Alg::eltwise_linear, alpha, beta, true, Alg::eltwise_clip_v2, 0, 1};
  } else if (op == "HardSwish") {
    e = EltwiseSpec{Alg::eltwise_hardswish, 0, 0};
  } else if (op == "Softplus") {
    e = EltwiseSpec{Alg::eltwise_soft_relu, 0, 0};
  } else {
    return Decline("activation ", op, " has no oneDNN eltwise algorithm");
  }
  e.drops_nan = op == "Clip" || op == "HardSigmoid" || op == "Exp";  // NaN -> bound / inf
  return e;
}

void AppendEltwise(dnnl::post_ops* po, const EltwiseSpec& e) {
  po->append_eltwise(1.0f, e.alg, e.alpha, e.beta);
  if (e.chained) po->append_eltwise(1.0f, e.alg2, e.alpha2, e.beta2);
}

}  // namespace strata::ops::onednn
