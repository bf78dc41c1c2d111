#include "ops/defs/tensor/tensor_util.h"

#include <algorithm>
#include <limits>

namespace strata::ops {

Status CopyElements(const Tensor& src, Tensor* dst) {
  if (src.dtype() != dst->dtype() || src.num_elements() != dst->num_elements())
    return InternalError("CopyElements: ", src.TypeString(), " into ", dst->TypeString());
  return DispatchStorage(src.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    std::copy_n(StorageOf<S>(src), src.num_elements(), StorageOf<S>(dst));
    return Status::OK();
  });
}

Status CheckIndexType(const InferContext& ctx, int i, std::string_view what) {
  if (!ctx.has_input(i)) return Status::OK();
  const DType t = ctx.input_dtype(i);
  if (t != DType::kUndefined && t != DType::kInt32 && t != DType::kInt64)
    return ctx.Error(what, " must be int32 or int64, got ", DTypeName(t));
  return Status::OK();
}

StatusOr<std::optional<std::vector<int64_t>>> KnownInts(const InferContext& ctx, int i, std::string_view what) {
  const Tensor* v = ctx.input_value(i);
  if (v == nullptr) return std::optional<std::vector<int64_t>>();
  auto ints = ReadInts(*v, what);
  if (!ints.ok()) return ctx.Error(ints.status().message());
  return std::optional<std::vector<int64_t>>(std::move(ints).value());
}

PartialShape UnknownShape(int rank) {
  if (rank < 0) return PartialShape::Unknown();
  return PartialShape::Of(std::vector<Dim>(rank));
}

StatusOr<Shape> ShapeFromDims(const std::vector<int64_t>& dims, const Node& node, std::string_view what) {
  int64_t total = 1;
  for (int64_t d : dims) {
    if (d < 0) return InvalidArgumentError(node.Describe(), ": ", what, " ", dims, " has a negative dimension ", d);
    // Leave room for the element size (up to 32 bytes for strings) so that byte counts cannot overflow either.
    if (d > 0 && total > (std::numeric_limits<int64_t>::max() / 64) / d)
      return InvalidArgumentError(node.Describe(), ": ", what, " ", dims, " has too many elements to allocate");
    total *= d;
  }
  return Shape(dims);
}

}  // namespace strata::ops
