// Constant: the value of exactly one of the attributes value, value_float(s), value_int(s), value_string(s).
// (sparse_value is not supported.)
#include "ops/op_util.h"

namespace strata::ops {
namespace {

StatusOr<Tensor> ConstantValue(const Node& node) {
  int set = 0;
  Tensor out;
  for (const auto& [name, attr] : node.attrs) {
    if (name == "value") {
      if (attr.type() != Attribute::Type::kTensor) return InvalidArgumentError(node.Describe(), ": 'value' must be a tensor");
      out = attr.t();
    } else if (name == "value_float") {
      out = Tensor::Scalar<float>(attr.f());
    } else if (name == "value_floats") {
      out = Tensor::FromVector<float>(attr.floats());
    } else if (name == "value_int") {
      out = Tensor::Scalar<int64_t>(attr.i());
    } else if (name == "value_ints") {
      out = Tensor::FromVector<int64_t>(attr.ints());
    } else if (name == "value_string") {
      out = Tensor::Scalar<std::string>(attr.s());
    } else if (name == "value_strings") {
      out = Tensor::FromVector<std::string>(attr.strings());
    } else if (name == "sparse_value") {
      return UnimplementedError(node.Describe(), ": sparse_value is not supported");
    } else {
      continue;
    }
    ++set;
  }
  if (set != 1)
    return InvalidArgumentError(node.Describe(), ": exactly one value attribute must be set, found ", set);
  return out;
}

Status ConstantInfer(InferContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(Tensor v, ConstantValue(ctx.node()));
  ctx.SetOutput(0, v.dtype(), PartialShape::Of(v.shape()));
  return Status::OK();
}

Status ConstantCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(Tensor v, ConstantValue(ctx.node()));
  ctx.SetOutput(0, std::move(v));  // attribute tensors are immutable: share, never copy
  return Status::OK();
}

}  // namespace

void RegisterConstant(OpRegistry* r) {
  OpSchema s;
  s.name = "Constant";
  s.min_inputs = 0;
  s.max_inputs = 0;
  s.infer = ConstantInfer;
  s.reference = ConstantCompute;
  s.no_grad_reason = "no inputs";
  s.view_input = kViewOfAttribute;
  r->Add(std::move(s));
}

}  // namespace strata::ops
