#include "strata/tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace strata {
namespace {

TEST(ShapeTest, InlineAndHeapDims) {
  Shape s{2, 3, 4};
  EXPECT_EQ(s.rank(), 3);
  EXPECT_EQ(s.NumElements(), 24);
  EXPECT_EQ(s.ToString(), "[2,3,4]");
  Shape big{1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(big.rank(), 8);
  EXPECT_EQ(big.NumElements(), 40320);
  EXPECT_EQ(big[7], 8);
  Shape copy = big;
  EXPECT_EQ(copy, big);
  copy.PushBack(2);
  EXPECT_EQ(copy.rank(), 9);
  EXPECT_EQ(copy.Product(7, 9), 16);
  EXPECT_EQ(Shape{}.NumElements(), 1);
  EXPECT_EQ((Shape{3, 0, 2}).NumElements(), 0);
  Shape grow{1, 2, 3, 4, 5, 6};
  grow.PushBack(7);
  EXPECT_EQ(grow.ToString(), "[1,2,3,4,5,6,7]");
}

TEST(PartialShapeTest, AcceptsAndPrints) {
  PartialShape p = PartialShape::Of({Dim::Symbol("batch"), Dim(224), Dim(), Dim(3)});
  EXPECT_EQ(p.ToString(), "[batch,224,?,3]");
  EXPECT_TRUE(p.Accepts(Shape{8, 224, 10, 3}));
  EXPECT_FALSE(p.Accepts(Shape{8, 225, 10, 3}));
  EXPECT_FALSE(p.Accepts(Shape{8, 224, 10}));
  EXPECT_FALSE(p.IsFullyKnown());
  EXPECT_TRUE(PartialShape::Unknown().Accepts(Shape{1}));
  EXPECT_EQ(PartialShape::Unknown().ToString(), "unknown rank");
}

TEST(DTypeTest, NamesSizesAndOnnxNumbers) {
  EXPECT_EQ(DTypeSize(DType::kFloat16), 2u);
  EXPECT_EQ(DTypeName(DType::kBFloat16), "bfloat16");
  EXPECT_EQ(*DTypeFromName("float"), DType::kFloat32);
  EXPECT_FALSE(DTypeFromName("float33").ok());
  EXPECT_EQ(*DTypeFromOnnx(7), DType::kInt64);
  EXPECT_EQ(DTypeFromOnnx(14).status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(DTypeFromOnnx(99).status().code(), StatusCode::kInvalidArgument);
}

TEST(Float16Test, KnownBitPatterns) {
  // Values and bit patterns from the IEEE 754 binary16 definition.
  EXPECT_EQ(Float16(1.0f).bits, 0x3c00);
  EXPECT_EQ(Float16(-2.0f).bits, 0xc000);
  EXPECT_EQ(Float16(65504.0f).bits, 0x7bff);
  EXPECT_EQ(Float16(65520.0f).bits, 0x7c00);  // rounds to infinity
  EXPECT_EQ(Float16(5.9604644775390625e-8f).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(Float16(6.103515625e-05f).bits, 0x0400);        // smallest normal
  EXPECT_EQ(Float16(0.333251953125f).bits, 0x3555);
  EXPECT_EQ(Float16(1.0f + 1.0f / 2048).bits, 0x3c00);  // tie rounds to even
  EXPECT_EQ(Float16(1.0f + 3.0f / 2048).bits, 0x3c02);  // tie rounds to even (up)
  EXPECT_TRUE(std::isnan(static_cast<float>(Float16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(static_cast<float>(Float16::FromBits(0x3555)), 0.333251953125f);
  EXPECT_EQ(static_cast<float>(Float16::FromBits(0x0001)), 5.9604644775390625e-8f);
  EXPECT_TRUE(std::isinf(static_cast<float>(Float16::FromBits(0xfc00))));
  // Every half value survives a round trip through float.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    Float16 h = Float16::FromBits(static_cast<uint16_t>(b));
    float f = static_cast<float>(h);
    if (std::isnan(f)) continue;
    ASSERT_EQ(Float16(f).bits, b) << "bits " << b;
  }
}

TEST(BFloat16Test, RoundsToNearestEven) {
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(static_cast<float>(BFloat16::FromBits(0x4049)), 3.140625f);
  // 1 + 2^-8 is exactly half way between bfloat16 1.0 and 1.0078125: ties to even gives 1.0.
  EXPECT_EQ(BFloat16(1.0f + 1.0f / 256).bits, 0x3f80);
  EXPECT_EQ(BFloat16(1.0f + 3.0f / 256).bits, 0x3f82);
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(TensorTest, CreateShareCloneReshape) {
  Tensor t = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  EXPECT_EQ(t.TypeString(), "float32[2,3]");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
  Tensor shared = t;
  shared.data<float>()[0] = 10;
  EXPECT_EQ(t.data<float>()[0], 10);
  Tensor copy = t.Clone();
  copy.data<float>()[0] = 20;
  EXPECT_EQ(t.data<float>()[0], 10);
  auto r = t.Reshaped(Shape{3, 2});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->data<float>()[5], 6);
  auto bad = t.Reshaped(Shape{4, 2});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("6 elements"), std::string::npos);
  EXPECT_EQ(Tensor::Scalar<int64_t>(7).rank(), 0);
  EXPECT_EQ(t.DebugString(3), "float32[2,3] {10, 2, 3, ...}");
}

TEST(TensorTest, StringTensorsConstructAndDestroy) {
  Tensor t = Tensor::Empty(DType::kString, Shape{3});
  t.data<std::string>()[1] = std::string(1000, 'x');  // heap-allocated string must be freed (ASan checks)
  Tensor c = t.Clone();
  EXPECT_EQ(c.data<std::string>()[1].size(), 1000u);
  EXPECT_EQ(c.data<std::string>()[0], "");
}

TEST(TensorTest, NegativeDimsRejected) {
  auto t = Tensor::Create(DType::kFloat32, Shape{2, -1});
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
}

TEST(TensorTest, OverflowingShapesRejected) {
  auto t = Tensor::Create(DType::kFloat32, Shape{int64_t{1} << 40, int64_t{1} << 40});
  EXPECT_EQ(t.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(t.status().message().find("too many elements"), std::string::npos);
}

TEST(AllocatorTest, LimitGivesResourceExhaustedAndCountsPeak) {
  LimitedAllocator alloc(1000);
  auto a = Tensor::Create(DType::kFloat32, Shape{200}, &alloc);  // 800 bytes
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(alloc.bytes_in_use(), 800u);
  auto b = Tensor::Create(DType::kFloat32, Shape{100}, &alloc);  // would be 1200
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(b.status().message().find("limit of 1000 bytes"), std::string::npos);
  { Tensor drop = std::move(a).value(); }
  EXPECT_EQ(alloc.bytes_in_use(), 0u);
  EXPECT_EQ(alloc.peak_bytes(), 800u);
  auto c = Tensor::Create(DType::kFloat32, Shape{250}, &alloc);
  EXPECT_TRUE(c.ok());
}

}  // namespace
}  // namespace strata
