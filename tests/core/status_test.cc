#include "strata/status.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

StatusOr<int> ParsePositive(int v) {
  if (v <= 0) return InvalidArgumentError("expected a positive number, got ", v);
  return v;
}

Status UsesMacros(int v, int* out) {
  STRATA_ASSIGN_OR_RETURN(int x, ParsePositive(v));
  STRATA_RETURN_IF_ERROR(x > 100 ? OutOfRangeError("too big: ", x) : Status::OK());
  *out = x * 2;
  return Status::OK();
}

TEST(StatusTest, OkIsDefaultAndCheap) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_EQ(s.message(), "");
}

TEST(StatusTest, ErrorCarriesCodeMessageAndContext) {
  Status s = InvalidArgumentError("input 'x' expects rank 4, got ", 3);
  s.WithContext("node 'conv1' (Conv)");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "node 'conv1' (Conv): input 'x' expects rank 4, got 3");
  EXPECT_EQ(s.ToString(), "INVALID_ARGUMENT: node 'conv1' (Conv): input 'x' expects rank 4, got 3");
  Status copy = s;
  EXPECT_EQ(copy, s);
  EXPECT_EQ(StatusCodeName(StatusCode::kResourceExhausted), "RESOURCE_EXHAUSTED");
}

TEST(StatusTest, MacrosPropagate) {
  int out = 0;
  EXPECT_TRUE(UsesMacros(4, &out).ok());
  EXPECT_EQ(out, 8);
  Status bad = UsesMacros(-1, &out);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "expected a positive number, got -1");
  EXPECT_EQ(UsesMacros(1000, &out).code(), StatusCode::kOutOfRange);
}

TEST(StatusTest, StatusOrFromOkStatusIsInternalError) {
  StatusOr<int> v = Status::OK();
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInternal);
}

TEST(StrCatTest, FormatsNumbersVectorsAndFloats) {
  EXPECT_EQ(StrCat("a", 1, ':', int64_t{-5}, ' ', std::vector<int64_t>{1, 2, 3}), "a1:-5 [1,2,3]");
  EXPECT_EQ(StrCat(0.1), "0.1");
  EXPECT_EQ(StrCat(1.5f), "1.5");
  EXPECT_EQ(StrCat(uint8_t{200}), "200");
  EXPECT_EQ(StrCat(true), "true");
  EXPECT_EQ(StrJoin(std::vector<std::string>{"x", "y"}, ", "), "x, y");
}

}  // namespace
}  // namespace strata
