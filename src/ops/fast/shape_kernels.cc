#include "ops/fast/shape_kernels.h"

#include <algorithm>
#include <cstring>

#include "ops/inplace.h"

namespace strata::ops::fast {
namespace {

constexpr int kMaxRank = 8;

class ViewKernel final : public Kernel {
 public:
  explicit ViewKernel(Shape out) : out_(std::move(out)) {}
  Status Run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    STRATA_ASSIGN_OR_RETURN(Tensor y, x.Reshaped(out_));
    ctx.SetOutput(0, std::move(y));
    return Status::OK();
  }
  std::string_view name() const override { return "view"; }

 private:
  Shape out_;
};

class AliasViewKernel final : public Kernel, public AliasKernel {
 public:
  explicit AliasViewKernel(Shape out) : out_(std::move(out)) {}
  Status Run(KernelContext& ctx) const override {
    STRATA_ASSIGN_OR_RETURN(Tensor y, ctx.input(0).Reshaped(out_));
    ctx.SetOutput(0, std::move(y));
    return Status::OK();
  }
  std::string_view name() const override { return "view"; }
  int alias_input() const override { return 0; }

 private:
  Shape out_;
};

// Slice as: for every index of the axes before `axis_` (odometer over outer_dims_), copy `count_` chunks of
// `chunk_bytes_` bytes, `stride_bytes_` apart in the input, to consecutive output memory.
class SliceKernel final : public Kernel {
 public:
  Status Run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), out_shape_));
    if (y->num_elements() == 0) return Status::OK();
    const char* src = static_cast<const char*>(x.raw_data()) + base_bytes_;
    char* dst = static_cast<char*>(y->raw_data());
    int64_t idx[kMaxRank] = {0};
    const bool contiguous = stride_bytes_ == chunk_bytes_;
    for (;;) {
      const char* s = src;
      for (int d = 0; d < outer_rank_; ++d) s += idx[d] * outer_stride_bytes_[d];
      if (contiguous) {
        std::memcpy(dst, s, chunk_bytes_ * count_);
        dst += chunk_bytes_ * count_;
      } else {
        for (int64_t i = 0; i < count_; ++i, dst += chunk_bytes_) std::memcpy(dst, s + i * stride_bytes_, chunk_bytes_);
      }
      int d = outer_rank_ - 1;
      for (; d >= 0; --d) {
        if (++idx[d] < outer_dims_[d]) break;
        idx[d] = 0;
      }
      if (d < 0) break;
    }
    return Status::OK();
  }
  std::string_view name() const override { return "fast"; }

  Shape out_shape_;
  int outer_rank_ = 0;
  int64_t outer_dims_[kMaxRank] = {0};
  int64_t outer_stride_bytes_[kMaxRank] = {0};  // input bytes per step of each outer axis (its step included)
  int64_t base_bytes_ = 0;                      // input offset of the first element
  int64_t count_ = 0;
  int64_t chunk_bytes_ = 0;
  int64_t stride_bytes_ = 0;
};

StatusOr<std::vector<int64_t>> ConstantInts(const KernelInit& init, int i) {
  if (i >= static_cast<int>(init.inputs.size()) || !init.node.has_input(i)) return std::vector<int64_t>{};
  const ValueType& vt = init.inputs[i];
  if (!vt.has_value()) return UnimplementedError("input ", i, " is not known at plan time");
  const Tensor& t = *vt.value;
  std::vector<int64_t> out;
  if (t.dtype() == DType::kInt64) {
    for (int64_t v : t.values<int64_t>()) out.push_back(v);
  } else if (t.dtype() == DType::kInt32) {
    for (int32_t v : t.values<int32_t>()) out.push_back(v);
  } else {
    return UnimplementedError("input ", i, " is not int32/int64");
  }
  return out;
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreateView(const KernelInit& init) {
  if (init.inputs.empty() || init.outputs.empty()) return UnimplementedError("no input/output");
  const ValueType& x = init.inputs[0];
  const ValueType& y = init.outputs[0];
  if (x.dtype == DType::kUndefined || x.dtype == DType::kString || y.dtype != x.dtype)
    return UnimplementedError("dtype");
  if (!x.shape.IsFullyKnown() || !y.shape.IsFullyKnown()) return UnimplementedError("shapes unknown at plan time");
  Shape out = y.shape.ToShape();
  if (out.NumElements() != x.shape.ToShape().NumElements()) return UnimplementedError("element counts differ");
  return std::unique_ptr<Kernel>(new ViewKernel(std::move(out)));
}

StatusOr<std::unique_ptr<Kernel>> CreateTransposeView(const KernelInit& init) {
  if (init.inputs.empty() || init.outputs.empty()) return UnimplementedError("no input/output");
  const ValueType& xt = init.inputs[0];
  if (xt.dtype == DType::kUndefined || xt.dtype == DType::kString) return UnimplementedError("dtype");
  if (!xt.shape.IsFullyKnown() || !init.outputs[0].shape.IsFullyKnown()) return UnimplementedError("unknown shapes");
  const Shape x = xt.shape.ToShape();
  std::vector<int64_t> perm = init.node.GetInts("perm");
  if (perm.empty())
    for (int i = x.rank() - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int>(perm.size()) != x.rank()) return UnimplementedError("perm length");
  int64_t last = -1;
  for (int64_t p : perm) {
    if (p < 0 || p >= x.rank()) return UnimplementedError("perm out of range");
    if (x[static_cast<int>(p)] == 1) continue;
    if (p < last) return UnimplementedError("a real transpose");
    last = p;
  }
  Shape out = init.outputs[0].shape.ToShape();
  if (out.NumElements() != x.NumElements()) return UnimplementedError("element counts differ");
  return std::unique_ptr<Kernel>(new AliasViewKernel(std::move(out)));
}

StatusOr<std::unique_ptr<Kernel>> CreateSlice(const KernelInit& init) {
  const Node& node = init.node;
  if (node.opset < 10) return UnimplementedError("Slice-1 (attributes)");
  if (init.inputs.size() < 3 || init.outputs.empty()) return UnimplementedError("needs data, starts, ends");
  const ValueType& xt = init.inputs[0];
  if (xt.dtype == DType::kUndefined || xt.dtype == DType::kString) return UnimplementedError("dtype");
  if (!xt.shape.IsFullyKnown() || !init.outputs[0].shape.IsFullyKnown()) return UnimplementedError("unknown shapes");
  const Shape x = xt.shape.ToShape();
  const int rank = x.rank();
  if (rank < 1 || rank > kMaxRank) return UnimplementedError("rank ", rank);
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> starts, ConstantInts(init, 1));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> ends, ConstantInts(init, 2));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ConstantInts(init, 3));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> steps, ConstantInts(init, 4));
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return UnimplementedError("operand lengths differ");
  std::vector<int64_t> begin(rank, 0), step(rank, 1), len(x.begin(), x.end());
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (a < 0 || a >= rank || seen[a] || steps[i] == 0) return UnimplementedError("bad axes/steps");
    seen[a] = true;
    const int64_t dim = x[static_cast<int>(a)];
    int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
    if (steps[i] > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      len[a] = e > s ? (e - s + steps[i] - 1) / steps[i] : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      len[a] = s > e ? (s - e + (-steps[i]) - 1) / (-steps[i]) : 0;
    }
    begin[a] = s;
    step[a] = steps[i];
  }
  auto k = std::make_unique<SliceKernel>();
  k->out_shape_ = Shape(len);
  if (k->out_shape_ != init.outputs[0].shape.ToShape()) return UnimplementedError("output shape differs from plan");
  const int64_t esize = static_cast<int64_t>(DTypeSize(xt.dtype));
  std::vector<int64_t> stride(rank);  // input strides in bytes
  int64_t st = esize;
  for (int d = rank - 1; d >= 0; --d) {
    stride[d] = st;
    st *= x[d];
  }
  for (int d = 0; d < rank; ++d) k->base_bytes_ += begin[d] * stride[d];
  // The last axis that is not taken whole: axes after it form a contiguous chunk.
  int last = rank - 1;
  while (last > 0 && begin[last] == 0 && step[last] == 1 && len[last] == x[last]) --last;
  int64_t chunk = esize;
  for (int d = last + 1; d < rank; ++d) chunk *= x[d];
  k->chunk_bytes_ = chunk;
  k->count_ = len[last];
  k->stride_bytes_ = step[last] * stride[last];
  k->outer_rank_ = last;
  for (int d = 0; d < last; ++d) {
    k->outer_dims_[d] = len[d];
    k->outer_stride_bytes_[d] = step[d] * stride[d];
  }
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace strata::ops::fast
