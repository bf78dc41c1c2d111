// strata.SoftmaxCrossEntropyWithLogits(logits, labels) -> loss, and its gradient op
// strata.SoftmaxCrossEntropyWithLogitsGrad(logits, labels, dloss) -> dlogits.
//
// Keras (sparse_)categorical_crossentropy averaged over the batch. logits has the classes on its last axis; R rows
// = its element count / C. Integer labels (int32/int64, R elements: shape [N], [N,1] or logits.shape[:-1]) are class
// indices (sparse); float labels of logits' shape are class probabilities (categorical). from_logits=1 (default)
// takes raw scores (log-softmax done stably here); from_logits=0 takes probabilities and, like Keras, divides each
// row by its sum and clips to [1e-7, 1-1e-7] before the log. loss = mean over rows, accumulated in double.
#include <cmath>

#include "ops/defs/train/train_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

constexpr double kEpsilon = 1e-7;  // Keras backend.epsilon()

Status CheckLabels(const Node& node, const Shape& logits, const Tensor& labels) {
  if (logits.rank() < 1 || logits[logits.rank() - 1] < 1)
    return InvalidArgumentError(node.Describe(), ": logits need a class axis, got ", logits.ToString());
  const int64_t rows = logits.NumElements() / logits[logits.rank() - 1];
  if (IsInteger(labels.dtype())) {
    if (labels.num_elements() != rows)
      return InvalidArgumentError(node.Describe(), ": sparse labels must have one class index per row (", rows,
                                  " rows for logits ", logits.ToString(), "), got ", labels.TypeString());
  } else if (labels.dtype() != DType::kFloat32 && labels.dtype() != DType::kFloat64) {
    return InvalidArgumentError(node.Describe(), ": labels must be integer class indices or float probabilities, got ",
                                labels.TypeString());
  } else if (labels.shape() != logits) {
    return InvalidArgumentError(node.Describe(), ": probability labels must have the logits' shape ",
                                logits.ToString(), ", got ", labels.TypeString());
  }
  return Status::OK();
}

// The label of row r as an index, or an error when it is out of range.
Status SparseLabel(const Node& node, const Tensor& labels, int64_t r, int64_t classes, int64_t* out) {
  const int64_t v = labels.dtype() == DType::kInt64 ? labels.data<int64_t>()[r]
                    : labels.dtype() == DType::kInt32 ? labels.data<int32_t>()[r]
                                                       : -1;
  if (labels.dtype() != DType::kInt64 && labels.dtype() != DType::kInt32)
    return InvalidArgumentError(node.Describe(), ": sparse labels must be int32 or int64, got ",
                                DTypeName(labels.dtype()));
  if (v < 0 || v >= classes)
    return InvalidArgumentError(node.Describe(), ": label ", v, " of row ", r, " is outside [0, ", classes, ")");
  *out = v;
  return Status::OK();
}

// Target probability of class j in row r (one-hot for sparse labels).
inline double Target(const Tensor& labels, int64_t r, int64_t j, int64_t classes, int64_t sparse_label) {
  if (sparse_label >= 0) return j == sparse_label ? 1.0 : 0.0;
  return labels.dtype() == DType::kFloat64 ? labels.data<double>()[r * classes + j]
                                            : labels.data<float>()[r * classes + j];
}

// Computes the loss of each row and, when `grad` is given, d(loss_row)/d(input) scaled by `grad_scale`.
template <typename T>
Status Rows(const KernelContext& ctx, const Tensor& x, const Tensor& labels, bool from_logits, double* loss_sum,
            T* grad, double grad_scale) {
  const int64_t classes = x.dim(x.rank() - 1);
  const int64_t rows = x.num_elements() / classes;
  const T* px = x.data<T>();
  std::vector<double> q(classes);
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t label = -1;
    if (IsInteger(labels.dtype())) STRATA_RETURN_IF_ERROR(SparseLabel(ctx.node(), labels, r, classes, &label));
    const T* row = px + r * classes;
    if (from_logits) {
      double mx = -INFINITY;
      for (int64_t j = 0; j < classes; ++j) mx = std::max(mx, static_cast<double>(row[j]));
      double s = 0;
      for (int64_t j = 0; j < classes; ++j) s += q[j] = std::exp(static_cast<double>(row[j]) - mx);
      const double lse = mx + std::log(s);
      // d/dx_j of sum_k z_k (lse - x_k) = (sum_k z_k) softmax_j - z_j (= softmax - z for a distribution).
      double zsum = 0;
      for (int64_t j = 0; j < classes; ++j) zsum += Target(labels, r, j, classes, label);
      for (int64_t j = 0; j < classes; ++j) {
        const double z = Target(labels, r, j, classes, label);
        if (z != 0) total += z * (lse - static_cast<double>(row[j]));
        if (grad) grad[r * classes + j] = T((zsum * q[j] / s - z) * grad_scale);
      }
      continue;
    }
    double s = 0;
    for (int64_t j = 0; j < classes; ++j) s += static_cast<double>(row[j]);
    double gq_dot = 0;
    for (int64_t j = 0; j < classes; ++j) {
      q[j] = static_cast<double>(row[j]) / s;
      const double c = std::clamp(q[j], kEpsilon, 1 - kEpsilon);
      const double z = Target(labels, r, j, classes, label);
      if (z != 0) total -= z * std::log(c);
      const double g = (q[j] > kEpsilon && q[j] < 1 - kEpsilon) ? -z / c : 0.0;
      if (grad) grad[r * classes + j] = T(g);
      gq_dot += g * q[j];
    }
    if (grad)
      for (int64_t j = 0; j < classes; ++j)
        grad[r * classes + j] = T((static_cast<double>(grad[r * classes + j]) - gq_dot) / s * grad_scale);
  }
  *loss_sum = total;
  return Status::OK();
}

Status XentInfer(InferContext& ctx) {
  const DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && t != DType::kFloat32 && t != DType::kFloat64)
    return ctx.Error("logits must be float32 or float64, got ", DTypeName(t));
  ctx.SetOutput(0, t, PartialShape::Of(std::vector<Dim>{}));
  return Status::OK();
}

Status XentCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& labels = ctx.input(1);
  STRATA_RETURN_IF_ERROR(CheckLabels(ctx.node(), x.shape(), labels));
  const bool from_logits = ctx.node().GetInt("from_logits", 1) != 0;
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), Shape{}));
  const int64_t rows = x.num_elements() / x.dim(x.rank() - 1);
  return DispatchFloat(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      double sum = 0;
      STRATA_RETURN_IF_ERROR(Rows<T>(ctx, x, labels, from_logits, &sum, nullptr, 0));
      y->data<T>()[0] = T(rows > 0 ? sum / static_cast<double>(rows) : 0.0);
      return Status::OK();
    }
    return ctx.Error("logits must be float32 or float64");
  });
}

Status XentGradInfer(InferContext& ctx) {
  ctx.SetOutput(0, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}

Status XentGradCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& labels = ctx.input(1);
  STRATA_RETURN_IF_ERROR(CheckLabels(ctx.node(), x.shape(), labels));
  const bool from_logits = ctx.node().GetInt("from_logits", 1) != 0;
  STRATA_ASSIGN_OR_RETURN(double dloss, train_ops::ScalarInput(ctx, 2, "dloss", 1.0));
  STRATA_ASSIGN_OR_RETURN(Tensor * dx, ctx.Output(0, x.dtype(), x.shape()));
  const int64_t rows = x.num_elements() / x.dim(x.rank() - 1);
  return DispatchFloat(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      double sum = 0;
      return Rows<T>(ctx, x, labels, from_logits, &sum, dx->data<T>(), rows > 0 ? dloss / rows : 0.0);
    }
    return ctx.Error("logits must be float32 or float64");
  });
}

Status XentGrad(GradContext& ctx) {
  if (!ctx.needs_input_grad(0)) return Status::OK();
  AttributeMap attrs;
  attrs["from_logits"] = Attribute::Int(ctx.node().GetInt("from_logits", 1));
  ctx.SetInputGrad(0, Emit1(ctx, "SoftmaxCrossEntropyWithLogitsGrad",
                            {ctx.node().inputs[0], ctx.node().inputs[1], ctx.output_grad(0)}, std::move(attrs),
                            graph::kStrataDomain));
  return Status::OK();
}

}  // namespace

void RegisterSoftmaxCrossEntropyWithLogits(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "SoftmaxCrossEntropyWithLogits";
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = XentInfer;
  s.reference = XentCompute;
  s.grad = XentGrad;
  r->Add(std::move(s));
}

void RegisterSoftmaxCrossEntropyWithLogitsGrad(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "SoftmaxCrossEntropyWithLogitsGrad";
  s.min_inputs = 3;
  s.max_inputs = 3;
  s.infer = XentGradInfer;
  s.reference = XentGradCompute;
  s.no_grad_reason = "second derivatives of the loss are not needed for training";
  r->Add(std::move(s));
}

}  // namespace strata::ops
