#include "io/npy.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "core/file_util.h"

namespace strata::io {
namespace {

std::string TempPath(const std::string& name) { return ::testing::TempDir() + "/" + name; }

// Runs a Python snippet with Debian's python3 + numpy, the independent reader/writer of .npy.
int RunPython(const std::string& code) {
  const std::string script = TempPath("npy_check.py");
  std::ofstream(script) << code;
  return std::system(("/usr/bin/python3 " + script).c_str());
}

TEST(NpyTest, RoundTripAllDtypes) {
  Tensor f = Tensor::FromVector<float>({1.5f, -2, 3, 4, 5, 6}, Shape{2, 3});
  Tensor i = Tensor::FromVector<int64_t>({-1, 2, 1LL << 40}, Shape{3});
  Tensor b = Tensor::FromVector<bool>({true, false}, Shape{2, 1});
  Tensor s = Tensor::Scalar<double>(2.25);
  for (const Tensor& t : {f, i, b, s}) {
    auto bytes = SerializeNpy(t);
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ((bytes->size() - t.byte_size()) % 64, 0u);
    auto back = ParseNpy(*bytes);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->TypeString(), t.TypeString());
    EXPECT_EQ(std::memcmp(back->raw_data(), t.raw_data(), t.byte_size()), 0);
  }
}

TEST(NpyTest, NumpyReadsOursAndWeReadNumpys) {
  const std::string ours = TempPath("ours.npy");
  ASSERT_TRUE(WriteNpy(ours, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3})).ok());
  const std::string theirs = TempPath("theirs.npy");
  const std::string theirs_f = TempPath("theirs_f.npy");
  const std::string theirs_h = TempPath("theirs_h.npy");
  ASSERT_EQ(RunPython("import numpy as np\n"
                      "a = np.load('" + ours + "')\n"
                      "assert a.dtype == np.float32 and a.shape == (2, 3), (a.dtype, a.shape)\n"
                      "assert (a == np.arange(1, 7, dtype=np.float32).reshape(2, 3)).all()\n"
                      "np.save('" + theirs + "', np.arange(24, dtype=np.int32).reshape(2, 3, 4))\n"
                      "np.save('" + theirs_f + "', np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3)))\n"
                      "np.save('" + theirs_h + "', np.array([1.0, 0.5, -2.0], dtype=np.float16))\n"),
            0);
  auto t = ReadNpy(theirs);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->TypeString(), "int32[2,3,4]");
  EXPECT_EQ(t->data<int32_t>()[23], 23);
  auto tf = ReadNpy(theirs_f);
  ASSERT_TRUE(tf.ok()) << tf.status().ToString();
  EXPECT_EQ(tf->TypeString(), "float64[2,3]");
  for (int k = 0; k < 6; ++k) EXPECT_EQ(tf->data<double>()[k], k);
  auto th = ReadNpy(theirs_h);
  ASSERT_TRUE(th.ok());
  EXPECT_EQ(static_cast<float>(th->data<Float16>()[1]), 0.5f);
}

TEST(NpyTest, BadInputGivesClearErrors) {
  EXPECT_NE(ParseNpy("garbage").status().message().find("not a .npy file"), std::string::npos);
  auto good = SerializeNpy(Tensor::FromVector<float>({1, 2, 3}));
  ASSERT_TRUE(good.ok());
  std::string truncated = good->substr(0, good->size() - 2);
  auto r = ParseNpy(truncated, "x.npy");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("x.npy: .npy data size mismatch"), std::string::npos);
  std::string header_cut = good->substr(0, 20);
  EXPECT_FALSE(ParseNpy(header_cut).ok());
  std::string big_endian = *good;
  big_endian.replace(big_endian.find("<f4"), 3, ">f4");
  EXPECT_EQ(ParseNpy(big_endian).status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(ReadNpy(TempPath("does_not_exist.npy")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(SerializeNpy(Tensor::Empty(DType::kString, Shape{1})).status().code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace strata::io
