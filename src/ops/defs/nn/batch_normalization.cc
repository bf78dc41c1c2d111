// BatchNormalization (opset 6, 7, 9, 14, 15) over X (N, C, D1..Dn), rank >= 2:
//   Y = scale * (X - mean) / sqrt(var + epsilon) + B, per channel.
// Inference uses input_mean / input_var. Training mode (opset >= 14: training_mode=1; opset 7-13: the running mean /
// var outputs are requested; opset 6: is_test=0) normalises with the batch statistics (population variance over N
// and the spatial axes) and outputs running_mean = input_mean * momentum + batch_mean * (1 - momentum), likewise
// running_var, as the spec's tests define. The opset < 14 outputs saved_mean / saved_var are Unimplemented. Opsets
// 6-7 spatial=0 (statistics per (C, D1..Dn) element) is supported. From opset 15 scale/B and mean/var may have other
// float types than X. Computes in float32 (float64 when any input is float64).
#include "core/parallel.h"
#include "ops/defs/nn/nn_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

struct BnParams {
  float epsilon = 1e-5f;
  float momentum = 0.9f;
  bool spatial = true;
  bool training = false;
};

// Reads the attributes; `wants_stats` says whether outputs 1 or 2 are requested.
StatusOr<BnParams> ReadBnParams(const Node& node, int opset, bool wants_stats, bool wants_saved) {
  BnParams p;
  p.epsilon = node.GetFloat("epsilon", 1e-5f);
  p.momentum = node.GetFloat("momentum", 0.9f);
  p.spatial = opset >= 9 || node.GetInt("spatial", 1) != 0;
  if (opset >= 14) {
    const int64_t tm = node.GetInt("training_mode", 0);
    if (tm != 0 && tm != 1) return InvalidArgumentError(node.Describe(), ": training_mode must be 0 or 1, got ", tm);
    p.training = tm == 1;
    if (!p.training && wants_stats)
      return InvalidArgumentError(node.Describe(), ": outputs running_mean and running_var are only produced with ",
                                  "training_mode=1");
  } else {
    p.training = wants_stats || (opset < 7 && node.GetInt("is_test", 0) == 0);
  }
  if (wants_saved)
    return UnimplementedError(node.Describe(), ": the saved_mean / saved_var outputs of BatchNormalization opset ",
                              opset, " are not supported");
  if (!(p.epsilon >= 0)) return InvalidArgumentError(node.Describe(), ": epsilon must be >= 0, got ", p.epsilon);
  return p;
}

Status BatchNormInfer(InferContext& ctx) {
  for (int i = 0; i < 5; ++i) {
    static const char* const kNames[] = {"X", "scale", "B", "input_mean", "input_var"};
    STRATA_RETURN_IF_ERROR(nn::RequireFloatInput(ctx, i, kNames[i]));
  }
  if (ctx.opset() < 15)
    for (int i = 1; i < 5; ++i) STRATA_RETURN_IF_ERROR(nn::RequireSameDtypeAs0(ctx, i, "scale/B/mean/var"));
  if (ctx.opset() >= 14 && ctx.num_outputs() > 3)
    return ctx.Error("BatchNormalization opset ", ctx.opset(), " has at most 3 outputs, got ", ctx.num_outputs());
  const Node& node = ctx.node();
  STRATA_ASSIGN_OR_RETURN(BnParams p, ReadBnParams(node, ctx.opset(), node.has_output(1) || node.has_output(2),
                                                   node.has_output(3) || node.has_output(4)));
  const PartialShape& x = ctx.input_shape(0);
  if (x.rank_known && x.rank() < 2) return ctx.Error("X must have rank >= 2 (N, C, ...), got ", x.ToString());
  PartialShape stat = PartialShape::Unknown();
  if (x.rank_known)
    stat = p.spatial ? PartialShape::Of({x.dims[1]}) : PartialShape::Of({x.dims.begin() + 1, x.dims.end()});
  for (int i = 1; i < 5; ++i) {
    const PartialShape& s = ctx.input_shape(i);
    if (!s.rank_known || !stat.rank_known) continue;
    bool ok = s.rank() == stat.rank();
    for (int d = 0; ok && d < s.rank(); ++d)
      ok = !s.dims[d].known() || !stat.dims[d].known() || s.dims[d].value == stat.dims[d].value;
    if (!ok)
      return ctx.Error("input ", i, " must have shape ", stat.ToString(), " (one value per channel), got ",
                       s.ToString());
  }
  ctx.SetOutput(0, ctx.input_dtype(0), x);
  for (int i = 1; i < ctx.num_outputs(); ++i) ctx.SetOutput(i, ctx.input_dtype(3), stat);
  return Status::OK();
}

template <typename C>
Status BatchNormRun(KernelContext& ctx, const BnParams& p, int64_t outer, int64_t channels, int64_t inner) {
  const Tensor& x = ctx.input(0);
  STRATA_ASSIGN_OR_RETURN(std::vector<C> scale, nn::ReadAs<C>(ctx.input(1)));
  STRATA_ASSIGN_OR_RETURN(std::vector<C> bias, nn::ReadAs<C>(ctx.input(2)));
  STRATA_ASSIGN_OR_RETURN(std::vector<C> mean, nn::ReadAs<C>(ctx.input(3)));
  STRATA_ASSIGN_OR_RETURN(std::vector<C> var, nn::ReadAs<C>(ctx.input(4)));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
  return DispatchFloat(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = y->data<T>();
    std::vector<C> batch_mean(channels), batch_var(channels);
    if (p.training) {
      const int64_t count = outer * inner;
      ParallelFor(channels, 1, [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c) {
          C sum = C(0);
          for (int64_t n = 0; n < outer; ++n)
            for (int64_t i = 0; i < inner; ++i) sum += ToCompute(px[(n * channels + c) * inner + i]);
          const C m = count > 0 ? sum / static_cast<C>(count) : C(0);
          C sq = C(0);
          for (int64_t n = 0; n < outer; ++n)
            for (int64_t i = 0; i < inner; ++i) {
              const C d = ToCompute(px[(n * channels + c) * inner + i]) - m;
              sq += d * d;
            }
          batch_mean[c] = m;
          batch_var[c] = count > 0 ? sq / static_cast<C>(count) : C(0);
        }
      });
    }
    const std::vector<C>& use_mean = p.training ? batch_mean : mean;
    const std::vector<C>& use_var = p.training ? batch_var : var;
    std::vector<C> a(channels), b(channels);  // y = x * a + b
    for (int64_t c = 0; c < channels; ++c) {
      a[c] = scale[c] / std::sqrt(use_var[c] + static_cast<C>(p.epsilon));
      b[c] = bias[c] - use_mean[c] * a[c];
    }
    ParallelFor(outer * channels, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, inner)),
                [&](int64_t begin, int64_t end) {
                  for (int64_t t = begin; t < end; ++t) {
                    const int64_t c = t % channels;
                    const T* src = px + t * inner;
                    T* dst = py + t * inner;
                    for (int64_t i = 0; i < inner; ++i) dst[i] = FromCompute<T>(ToCompute(src[i]) * a[c] + b[c]);
                  }
                });
    const C mom = static_cast<C>(p.momentum);
    for (int out = 1; out <= 2; ++out) {
      if (!ctx.output_wanted(out)) continue;
      const Tensor& in = ctx.input(out + 2);
      STRATA_ASSIGN_OR_RETURN(Tensor * r, ctx.Output(out, in.dtype(), in.shape()));
      const std::vector<C>& prev = out == 1 ? mean : var;
      const std::vector<C>& batch = out == 1 ? batch_mean : batch_var;
      STRATA_RETURN_IF_ERROR(DispatchFloat(in.dtype(), [&](auto rtag) {
        using R = typename decltype(rtag)::type;
        R* pr = r->data<R>();
        for (int64_t c = 0; c < channels; ++c) pr[c] = FromCompute<R>(prev[c] * mom + batch[c] * (C(1) - mom));
        return Status::OK();
      }));
    }
    return Status::OK();
  });
}

Status BatchNormCompute(KernelContext& ctx) {
  const Node& node = ctx.node();
  const Tensor& x = ctx.input(0);
  for (int i = 0; i < 5; ++i)
    if (!IsFloatingPoint(ctx.input(i).dtype()))
      return ctx.Error("input ", i, " must be a float tensor, got ", DTypeName(ctx.input(i).dtype()));
  if (x.rank() < 2) return ctx.Error("X must have rank >= 2 (N, C, ...), got ", x.shape().ToString());
  STRATA_ASSIGN_OR_RETURN(BnParams p, ReadBnParams(node, ctx.opset(), ctx.output_wanted(1) || ctx.output_wanted(2),
                                                   ctx.output_wanted(3) || ctx.output_wanted(4)));
  const int64_t outer = x.dim(0);
  const int64_t channels = p.spatial ? x.dim(1) : x.shape().Product(1, x.rank());
  const int64_t inner = p.spatial ? x.shape().Product(2, x.rank()) : 1;
  const Shape stat = p.spatial ? Shape{x.dim(1)} : Shape(std::span<const int64_t>(x.shape().data() + 1, x.rank() - 1));
  for (int i = 1; i < 5; ++i)
    if (ctx.input(i).shape() != stat)
      return ctx.Error("input ", i, " must have shape ", stat.ToString(), ", got ", ctx.input(i).shape().ToString());
  bool use_double = false;
  for (int i = 0; i < 5; ++i) use_double |= ctx.input(i).dtype() == DType::kFloat64;
  return use_double ? BatchNormRun<double>(ctx, p, outer, channels, inner)
                    : BatchNormRun<float>(ctx, p, outer, channels, inner);
}

// dX, dScale, dB = strata.BatchNormalizationGrad(dY, X, scale, mean, var), in training mode through the batch
// statistics. In inference mode the mean and var inputs get gradients too: dmean = -dB scale istd and
// dvar = -dScale scale istd^2 / 2. The running statistics outputs are not differentiated.
Status BatchNormGrad(GradContext& ctx) {
  const Node& node = ctx.node();
  if (!ctx.output_grad(1).empty() || !ctx.output_grad(2).empty())
    return UnimplementedError(node.Describe(), ": the running mean/var outputs are not differentiable here");
  const bool wants_stats = node.has_output(1) || node.has_output(2);
  STRATA_ASSIGN_OR_RETURN(BnParams p,
                          ReadBnParams(node, node.opset, wants_stats, node.has_output(3) || node.has_output(4)));
  AttributeMap attrs;
  attrs["epsilon"] = Attribute::Float(p.epsilon);
  attrs["training_mode"] = Attribute::Int(p.training ? 1 : 0);
  attrs["spatial"] = Attribute::Int(p.spatial ? 1 : 0);
  const std::vector<std::string> g =
      ctx.Emit("BatchNormalizationGrad", {ctx.output_grad(0), In(ctx, 0), In(ctx, 1), In(ctx, 3), In(ctx, 4)},
               std::move(attrs), 3, graph::kStrataDomain);
  for (int i = 0; i < 3; ++i)
    if (ctx.needs_input_grad(i)) ctx.SetInputGrad(i, g[i]);
  if (!p.training && (ctx.needs_input_grad(3) || ctx.needs_input_grad(4))) {
    const DType t = InType(ctx, 4);
    const std::string istd =
        Emit1(ctx, "Reciprocal", {Emit1(ctx, "Sqrt", {EAdd(ctx, In(ctx, 4), ScalarConst(ctx, t, p.epsilon))})});
    const std::string s = EMul(ctx, Emit1(ctx, "CastLike", {In(ctx, 1), In(ctx, 4)}), istd);
    if (ctx.needs_input_grad(3))
      ctx.SetInputGrad(
          3, ENeg(ctx, EMul(ctx, Emit1(ctx, "CastLike", {g[2], In(ctx, 3)}), Emit1(ctx, "CastLike", {s, In(ctx, 3)}))));
    if (ctx.needs_input_grad(4))
      ctx.SetInputGrad(4, EMul(ctx, EMul(ctx, Emit1(ctx, "CastLike", {g[1], In(ctx, 4)}), EMul(ctx, s, istd)),
                               ScalarConst(ctx, t, -0.5)));
  }
  return Status::OK();
}

}  // namespace

void RegisterBatchNormalization(OpRegistry* r) {
  OpSchema s;
  s.name = "BatchNormalization";
  s.since_version = 15;
  s.min_inputs = 5;
  s.max_inputs = 5;
  s.min_outputs = 1;
  s.max_outputs = 5;  // opset < 14: Y, mean, var, saved_mean, saved_var; opset >= 14: Y, running_mean, running_var
  s.infer = BatchNormInfer;
  s.reference = BatchNormCompute;
  s.grad = BatchNormGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
