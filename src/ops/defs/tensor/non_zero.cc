// NonZero (opset 9, 13): the indices of the non-zero elements as an int64 [rank, count] tensor, in row-major order
// (numpy.nonzero stacked); strings count as non-zero when non-empty. A scalar input is treated as 1-D of one element,
// giving [1, count].
#include "ops/defs/tensor/tensor_util.h"

namespace strata::ops {
namespace {

Status NonZeroInfer(InferContext& ctx) {
  const PartialShape& in = ctx.input_shape(0);
  const Dim rows = in.rank_known ? Dim(std::max(in.rank(), 1)) : Dim();
  ctx.SetOutput(0, DType::kInt64, PartialShape::Of({rows, Dim()}));
  return Status::OK();
}

template <typename T>
std::vector<int64_t> NonZeroPositions(const Tensor& x) {
  std::vector<int64_t> pos;
  const T* p = x.data<T>();
  const int64_t n = x.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, bool>) {
      if (p[i]) pos.push_back(i);
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!p[i].empty()) pos.push_back(i);
    } else {
      if (ToCompute(p[i]) != ComputeType<T>(0)) pos.push_back(i);
    }
  }
  return pos;
}

Status NonZeroCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> pos;
  STRATA_RETURN_IF_ERROR(DispatchAll(x.dtype(), [&](auto tag) {
    pos = NonZeroPositions<typename decltype(tag)::type>(x);
    return Status::OK();
  }));
  const int rank = std::max(x.rank(), 1);
  const int64_t count = static_cast<int64_t>(pos.size());
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DType::kInt64, Shape{rank, count}));
  int64_t* out = y->data<int64_t>();
  const Shape shape = x.rank() == 0 ? Shape{1} : x.shape();
  for (int64_t c = 0; c < count; ++c) {
    int64_t flat = pos[c];
    for (int d = rank - 1; d >= 0; --d) {
      out[d * count + c] = flat % shape[d];
      flat /= shape[d];
    }
  }
  return Status::OK();
}

}  // namespace

void RegisterNonZero(OpRegistry* r) {
  OpSchema s;
  s.name = "NonZero";
  s.since_version = 9;
  s.infer = NonZeroInfer;
  s.reference = NonZeroCompute;
  s.no_grad_reason = "integer output";
  r->Add(std::move(s));
}

}  // namespace strata::ops
