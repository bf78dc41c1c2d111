#include "ops/defs/generator/random_util.h"

#include "ops/defs/tensor/tensor_util.h"

#include <atomic>
#include <cmath>
#include <random>

namespace strata::ops {

NumpyRandom::NumpyRandom(uint32_t seed) {
  // Knuth's initialisation (MT19937 init_genrand), as numpy's legacy seeding of an integer.
  mt_[0] = seed;
  for (int i = 1; i < 624; ++i) mt_[i] = 1812433253u * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  pos_ = 624;
}

void NumpyRandom::Refill() {
  constexpr uint32_t kUpper = 0x80000000u, kLower = 0x7fffffffu, kMatrix = 0x9908b0dfu;
  for (int i = 0; i < 624; ++i) {
    const uint32_t y = (mt_[i] & kUpper) | (mt_[(i + 1) % 624] & kLower);
    mt_[i] = mt_[(i + 397) % 624] ^ (y >> 1) ^ ((y & 1u) ? kMatrix : 0u);
  }
  pos_ = 0;
}

uint32_t NumpyRandom::NextU32() {
  if (pos_ >= 624) Refill();
  uint32_t y = mt_[pos_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

double NumpyRandom::Uniform() {
  const uint32_t a = NextU32() >> 5, b = NextU32() >> 6;
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

double NumpyRandom::Gauss() {
  if (has_gauss_) {
    has_gauss_ = false;
    return gauss_;
  }
  double x1, x2, r2;
  do {
    x1 = 2.0 * Uniform() - 1.0;
    x2 = 2.0 * Uniform() - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  const double f = std::sqrt(-2.0 * std::log(r2) / r2);
  gauss_ = f * x1;
  has_gauss_ = true;
  return f * x2;
}

uint32_t OpSeed(const Node& node) {
  if (const Attribute* a = node.FindAttr("seed")) {
    if (a->type() == Attribute::Type::kFloat && std::isfinite(a->f()))
      return static_cast<uint32_t>(static_cast<int64_t>(a->f()));
    if (a->type() == Attribute::Type::kInt) return static_cast<uint32_t>(a->i());
  }
  // splitmix64 over a counter that starts at a nondeterministic value.
  static std::atomic<uint64_t> counter{(static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}()};
  uint64_t z = counter.fetch_add(0x9e3779b97f4a7c15ULL) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<uint32_t>(z ^ (z >> 31));
}

StatusOr<DType> RandomDtype(const Node& node, DType def) {
  DType t = def;
  if (node.HasAttr("dtype")) {
    auto d = DTypeFromOnnx(static_cast<int>(node.GetInt("dtype", 1)));
    if (!d.ok()) return InvalidArgumentError(node.Describe(), ": dtype: ", d.status().message());
    t = *d;
  }
  if (!IsFloatingPoint(t))
    return InvalidArgumentError(node.Describe(), ": the output type must be a float type, got ", DTypeName(t));
  return t;
}

namespace {

Status Fill(KernelContext& ctx, const RandomDistribution& dist, DType dtype, const Shape& shape) {
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, dtype, shape));
  const double a = ctx.node().GetFloat(dist.a_name, dist.a_default);
  const double b = ctx.node().GetFloat(dist.b_name, dist.b_default);
  NumpyRandom rng(OpSeed(ctx.node()));
  return DispatchFloat(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (T& v : y->mutable_values<T>()) v = T(static_cast<ComputeType<T>>(dist.draw(a, b, rng)));
    return Status::OK();
  });
}

StatusOr<Shape> AttributeShape(const Node& node) {
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, node.RequireInts("shape"));
  return ShapeFromDims(dims, node, "shape");
}

}  // namespace

Status RandomFromShapeInfer(InferContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(DType dtype, RandomDtype(ctx.node(), DType::kFloat32));
  STRATA_ASSIGN_OR_RETURN(Shape shape, AttributeShape(ctx.node()));
  ctx.SetOutput(0, dtype, PartialShape::Of(shape));
  return Status::OK();
}

Status RandomLikeInfer(InferContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(DType dtype, RandomDtype(ctx.node(), ctx.input_dtype(0)));
  ctx.SetOutput(0, dtype, ctx.input_shape(0));
  return Status::OK();
}

Status RandomFromShapeCompute(KernelContext& ctx, const RandomDistribution& dist) {
  STRATA_ASSIGN_OR_RETURN(DType dtype, RandomDtype(ctx.node(), DType::kFloat32));
  STRATA_ASSIGN_OR_RETURN(Shape shape, AttributeShape(ctx.node()));
  return Fill(ctx, dist, dtype, shape);
}

Status RandomLikeCompute(KernelContext& ctx, const RandomDistribution& dist) {
  STRATA_ASSIGN_OR_RETURN(DType dtype, RandomDtype(ctx.node(), ctx.input(0).dtype()));
  return Fill(ctx, dist, dtype, ctx.input(0).shape());
}

}  // namespace strata::ops
