#include "ops/op_util.h"

#include <algorithm>
#include <limits>

namespace strata::ops {

StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  const int rank = std::max(a.rank(), b.rank());
  Shape out;
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i;
    const int ib = b.rank() - rank + i;
    const int64_t da = ia >= 0 ? a[ia] : 1;
    const int64_t db = ib >= 0 ? b[ib] : 1;
    if (da == db || db == 1) {
      out.PushBack(da);
    } else if (da == 1) {
      out.PushBack(db);
    } else {
      return InvalidArgumentError("shapes ", a.ToString(), " and ", b.ToString(), " cannot be broadcast (dimension ",
                                  i - rank, ": ", da, " vs ", db, ")");
    }
  }
  return out;
}

StatusOr<PartialShape> BroadcastPartial(const PartialShape& a, const PartialShape& b) {
  if (!a.rank_known || !b.rank_known) return PartialShape::Unknown();
  const int rank = std::max(a.rank(), b.rank());
  std::vector<Dim> dims;
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i;
    const int ib = b.rank() - rank + i;
    const Dim da = ia >= 0 ? a.dims[ia] : Dim(1);
    const Dim db = ib >= 0 ? b.dims[ib] : Dim(1);
    if (da.known() && db.known()) {
      if (da.value == db.value || db.value == 1) {
        dims.push_back(da);
      } else if (da.value == 1) {
        dims.push_back(db);
      } else {
        return InvalidArgumentError("shapes ", a.ToString(), " and ", b.ToString(), " cannot be broadcast (dimension ",
                                    i - rank, ": ", da.value, " vs ", db.value, ")");
      }
    } else if (da.known() && da.value == 1) {
      dims.push_back(db);
    } else if (db.known() && db.value == 1) {
      dims.push_back(da);
    } else if (!da.known() && !db.known() && !da.symbol.empty() && da.symbol == db.symbol) {
      dims.push_back(da);
    } else if (da.known()) {
      dims.push_back(da);  // the unknown side must be 1 or equal
    } else if (db.known()) {
      dims.push_back(db);
    } else {
      dims.emplace_back();
    }
  }
  return PartialShape::Of(std::move(dims));
}

StatusOr<int> NormalizeAxis(int64_t axis, int rank, const Node& node, std::string_view what) {
  if (axis < -rank || axis >= std::max(rank, 1)) {
    if (!(rank == 0 && (axis == 0 || axis == -1)))
      return InvalidArgumentError(node.Describe(), ": ", what, " ", axis, " is out of range for rank ", rank,
                                  " (expected [", -rank, ", ", rank - 1, "])");
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

StatusOr<std::vector<int>> NormalizeAxes(const std::vector<int64_t>& axes, int rank, const Node& node) {
  std::vector<int> out;
  for (int64_t a : axes) {
    STRATA_ASSIGN_OR_RETURN(int n, NormalizeAxis(a, rank, node, "axis"));
    if (std::find(out.begin(), out.end(), n) != out.end())
      return InvalidArgumentError(node.Describe(), ": axis ", a, " appears more than once in ", axes);
    out.push_back(n);
  }
  return out;
}

std::vector<int64_t> Strides(const Shape& s) {
  std::vector<int64_t> st(s.rank(), 1);
  for (int i = s.rank() - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.rank(), 0);
  const std::vector<int64_t> own = Strides(in);
  const int offset = out.rank() - in.rank();
  for (int i = 0; i < in.rank(); ++i) st[offset + i] = in[i] == 1 ? 0 : own[i];
  return st;
}

StatusOr<std::vector<int64_t>> ReadInts(const Tensor& t, std::string_view what) {
  std::vector<int64_t> out;
  out.reserve(t.num_elements());
  if (t.dtype() == DType::kInt64) {
    for (int64_t v : t.values<int64_t>()) out.push_back(v);
  } else if (t.dtype() == DType::kInt32) {
    for (int32_t v : t.values<int32_t>()) out.push_back(v);
  } else {
    return InvalidArgumentError(what, " must be int32 or int64, got ", DTypeName(t.dtype()));
  }
  return out;
}

StatusOr<double> ReadScalar(const Tensor& t, std::string_view what) {
  if (t.num_elements() != 1) return InvalidArgumentError(what, " must have one element, got shape ", t.shape().ToString());
  if (t.dtype() == DType::kBool) return t.data<bool>()[0] ? 1.0 : 0.0;
  double v = 0;
  Status s = DispatchNumeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    v = static_cast<double>(ToCompute(t.data<T>()[0]));
    return Status::OK();
  });
  if (!s.ok()) return InvalidArgumentError(what, ": ", s.message());
  return v;
}

namespace {
template <typename S, typename D>
void ConvertTyped(const S* s, D* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<D, bool>) {
      d[i] = static_cast<double>(ToCompute(s[i])) != 0.0;
    } else if constexpr (std::is_same_v<S, bool>) {
      d[i] = D(static_cast<ComputeType<D>>(s[i] ? 1 : 0));
    } else if constexpr (std::is_floating_point_v<ComputeType<S>> && std::is_integral_v<D>) {
      // Float to integer: truncate toward zero; NaN/out-of-range values are implementation-defined in C++, so pin
      // them (NaN -> 0, saturate) to keep the result deterministic.
      const double v = static_cast<double>(ToCompute(s[i]));
      if (std::isnan(v)) {
        d[i] = 0;
      } else if (v <= static_cast<double>(std::numeric_limits<D>::lowest())) {
        d[i] = std::numeric_limits<D>::lowest();
      } else if (v >= static_cast<double>(std::numeric_limits<D>::max())) {
        d[i] = std::numeric_limits<D>::max();
      } else {
        d[i] = static_cast<D>(v);
      }
    } else {
      d[i] = D(static_cast<ComputeType<D>>(ToCompute(s[i])));
    }
  }
}
}  // namespace

Status ConvertElements(const Tensor& src, Tensor* dst) {
  const int64_t n = src.num_elements();
  auto numeric_or_bool = [](DType t, auto&& fn) -> Status {
    if (t == DType::kBool) return fn(TypeTag<bool>{});
    return DispatchNumeric(t, fn);
  };
  return numeric_or_bool(src.dtype(), [&](auto stag) {
    using S = typename decltype(stag)::type;
    return numeric_or_bool(dst->dtype(), [&](auto dtag) {
      using D = typename decltype(dtag)::type;
      ConvertTyped<S, D>(src.data<S>(), dst->data<D>(), n);
      return Status::OK();
    });
  });
}

Status InferSameAsInput0(InferContext& ctx) {
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.SetOutput(i, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}

Status CheckSameDtype(const InferContext& ctx) {
  DType first = DType::kUndefined;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    DType t = ctx.input_dtype(i);
    if (t == DType::kUndefined) continue;
    if (first == DType::kUndefined) {
      first = t;
    } else if (t != first) {
      return ctx.Error("all inputs must have the same element type; input 0 is ", DTypeName(first), ", input ", i,
                       " is ", DTypeName(t));
    }
  }
  return Status::OK();
}

static StatusOr<PartialShape> BroadcastAllInputs(const InferContext& ctx) {
  PartialShape out = ctx.input_shape(0);
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    auto b = BroadcastPartial(out, ctx.input_shape(i));
    if (!b.ok()) return ctx.Error(b.status().message());
    out = *b;
  }
  return out;
}

Status InferBroadcast(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckSameDtype(ctx));
  STRATA_ASSIGN_OR_RETURN(PartialShape out, BroadcastAllInputs(ctx));
  ctx.SetOutput(0, ctx.input_dtype(0), std::move(out));
  return Status::OK();
}

Status InferBroadcastBool(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckSameDtype(ctx));
  STRATA_ASSIGN_OR_RETURN(PartialShape out, BroadcastAllInputs(ctx));
  ctx.SetOutput(0, DType::kBool, std::move(out));
  return Status::OK();
}

}  // namespace strata::ops
