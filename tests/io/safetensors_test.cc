// safetensors: files we write are read by python3 (json + numpy.frombuffer, written here from the format's
// description), files python3 writes are read by us, and every malformed header is rejected with a message that
// names the file and the tensor.
#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/file_util.h"
#include "test_util.h"

namespace strata::io {
namespace {

using testing_util::RunPython;
using testing_util::TempPath;

Tensor Iota(DType dtype, Shape shape) {
  Tensor t = Tensor::Empty(dtype, shape);
  auto* p = static_cast<uint8_t*>(t.raw_data());
  for (size_t i = 0; i < t.byte_size(); ++i) p[i] = static_cast<uint8_t>(i * 37 + 11);
  if (dtype == DType::kBool)
    for (size_t i = 0; i < t.byte_size(); ++i) p[i] &= 1;
  return t;
}

TEST(SafetensorsTest, PythonReadsWhatWeWrite) {
  Tensor f32 = Tensor::Empty(DType::kFloat32, Shape{2, 3});
  for (int i = 0; i < 6; ++i) f32.data<float>()[i] = 0.5f * i - 1.0f;
  Tensor i64 = Tensor::Empty(DType::kInt64, Shape{});
  i64.data<int64_t>()[0] = -1234567890123LL;
  NamedTensors ts = {{"dense/kernel", f32},
                     {"step", i64},
                     {"h", Iota(DType::kFloat16, Shape{5})},
                     {"b", Iota(DType::kBFloat16, Shape{3})},
                     {"d", Iota(DType::kFloat64, Shape{2})},
                     {"i8", Iota(DType::kInt8, Shape{7})},
                     {"u8", Iota(DType::kUInt8, Shape{1, 3})},
                     {"i16", Iota(DType::kInt16, Shape{3})},
                     {"i32", Iota(DType::kInt32, Shape{2, 2})},
                     {"mask", Iota(DType::kBool, Shape{4})},
                     {"empty", Tensor::Empty(DType::kFloat32, Shape{0, 4})}};
  const std::string path = TempPath("w.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, ts, {{"format", "pt"}, {"note", "a \"quoted\" value"}}).ok());
  // The reader below knows only the format: header length, JSON, offsets, numpy dtypes.
  std::string py =
      "import json, struct, numpy as np\n"
      "b = open('" +
      path +
      "', 'rb').read()\n"
      "n, = struct.unpack('<Q', b[:8])\n"
      "h = json.loads(b[8:8 + n])\n"
      "data = b[8 + n:]\n"
      "assert h.pop('__metadata__') == {'format': 'pt', 'note': 'a \"quoted\" value'}\n"
      "dt = {'F32': '<f4', 'F64': '<f8', 'F16': '<f2', 'I64': '<i8', 'I32': '<i4', 'I16': '<i2',\n"
      "      'I8': 'i1', 'U8': 'u1', 'BOOL': '?', 'BF16': '<u2'}\n"
      "spans = sorted(tuple(v['data_offsets']) for v in h.values())\n"
      "assert spans[0][0] == 0 and spans[-1][1] == len(data), spans\n"
      "assert all(a[1] == b[0] for a, b in zip(spans, spans[1:])), spans\n"
      "def get(k):\n"
      "    v = h[k]; s, e = v['data_offsets']\n"
      "    return np.frombuffer(data[s:e], dtype=dt[v['dtype']]).reshape(v['shape'])\n"
      "assert h['dense/kernel']['dtype'] == 'F32' and h['dense/kernel']['shape'] == [2, 3]\n"
      "assert (get('dense/kernel') == np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5 - 1).all()\n"
      "assert h['step']['shape'] == [] and get('step') == -1234567890123\n"
      "assert h['empty']['shape'] == [0, 4] and get('empty').size == 0\n"
      "for k, v in h.items():\n"
      "    s, e = v['data_offsets']\n"
      "    assert s % np.dtype(dt[v['dtype']]).itemsize == 0, (k, s)  # aligned\n"
      "    if k not in ('dense/kernel', 'step', 'empty', 'mask'):\n"
      "        raw = bytes((i * 37 + 11) % 256 for i in range(e - s))\n"
      "        assert data[s:e] == raw, k\n"
      "assert list(get('mask')) == [bool(((i * 37 + 11) % 256) & 1) for i in range(4)]\n"
      "assert n % 8 == 0\n";
  ASSERT_EQ(RunPython(py), 0);
  // And it reads back to the same bytes.
  auto back = ReadSafetensors(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->tensors.size(), ts.size());
  EXPECT_EQ(back->metadata.at("note"), "a \"quoted\" value");
  for (const auto& [name, t] : ts) {
    const Tensor* got = back->Find(name);
    ASSERT_NE(got, nullptr) << name;
    EXPECT_EQ(got->dtype(), t.dtype()) << name;
    EXPECT_EQ(got->shape(), t.shape()) << name;
    EXPECT_EQ(std::memcmp(got->raw_data(), t.raw_data(), t.byte_size()), 0) << name;
  }
}

TEST(SafetensorsTest, ReadsWhatPythonWrites) {
  const std::string path = TempPath("py.safetensors");
  // Written by hand in Python: unsorted keys, offsets in a different order from the keys, no padding.
  ASSERT_EQ(RunPython("import json, struct, numpy as np\n"
                      "a = np.arange(12, dtype='<f4').reshape(3, 4) / 8\n"
                      "b = np.array([[-5, 7]], dtype='<i4')\n"
                      "c = np.array([1.5, -2.25], dtype='<f8')\n"
                      "h = {'z': {'dtype': 'I32', 'shape': [1, 2], 'data_offsets': [48, 56]},\n"
                      "     '__metadata__': {'k': 'v'},\n"
                      "     'a': {'data_offsets': [0, 48], 'shape': [3, 4], 'dtype': 'F32'},\n"
                      "     'c': {'dtype': 'F64', 'shape': [2], 'data_offsets': [56, 72]}}\n"
                      "j = json.dumps(h).encode()\n"
                      "open('" +
                      path +
                      "', 'wb').write(struct.pack('<Q', len(j)) + j + a.tobytes() + b.tobytes()"
                      " + c.tobytes())\n"),
            0);
  auto st = ReadSafetensors(path);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->metadata, (std::map<std::string, std::string>{{"k", "v"}}));
  ASSERT_EQ(st->tensors.size(), 3u);
  EXPECT_EQ(st->tensors[0].first, "a");  // data-section order
  const Tensor* a = st->Find("a");
  ASSERT_EQ(a->shape(), (Shape{3, 4}));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(a->data<float>()[i], i / 8.0f);
  const Tensor* z = st->Find("z");
  ASSERT_EQ(z->dtype(), DType::kInt32);
  EXPECT_EQ(z->data<int32_t>()[0], -5);
  EXPECT_EQ(z->data<int32_t>()[1], 7);
  EXPECT_EQ(st->Find("c")->data<double>()[1], -2.25);
}

// A file image from a header text and a data section.
std::string Image(const std::string& header, size_t data_bytes, uint64_t declared = UINT64_MAX) {
  const uint64_t n = declared == UINT64_MAX ? header.size() : declared;
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return out + header + std::string(data_bytes, '\0');
}

TEST(SafetensorsTest, RejectsMalformedFilesNamingFileAndTensor) {
  struct Case {
    std::string bytes;
    std::string want;
  };
  const std::string ok_entry = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::vector<Case> cases = {
      {"abc", "3 bytes, shorter than the 8-byte"},
      {Image("{}", 0, 50), "header length 50 exceeds the 2 bytes"},
      {Image("[]", 0), "does not start with '{'"},
      {Image("{\"w\":", 0), "f.st header"},
      {Image("{" + ok_entry + "," + ok_entry + "}", 8), "key 'w' appears twice"},
      {Image(R"({"w":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8),
       "key 'dtype' appears twice"},
      {Image(R"({"__metadata__":{"k":"a","\u006b":"b"}})", 0), "key 'k' appears twice"},
      {Image(R"({"w":{"dtype":"F8","shape":[2],"data_offsets":[0,8]}})", 8), "tensor 'w': unsupported dtype 'F8'"},
      {Image(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8), "tensor 'w': a dimension must be"},
      {Image(R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", 8), "a dimension must be"},
      {Image(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "tensor 'w': F32 shape [3] needs 12"},
      {Image(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8), "end before begin"},
      {Image(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4), "run past the data section of 4"},
      {Image(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 12), "cover 8 of the 12 bytes"},
      {Image(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12), "tensor 'w' starts at data offset 4"},
      {Image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
             R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
             12),
       "overlaps"},
      {Image(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", 8), "unexpected key 'x'"},
      {Image(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", 8), "tensor 'w': missing shape"},
      {Image(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8), "data_offsets must be [begin, end]"},
      {Image(R"({"__metadata__":{"k":1}})", 0), "__metadata__ 'k' is not a string"},
      {Image(R"({"m":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", 0) + "\x01\x02", "BOOL element 1 is 2"},
      {Image(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}})", 8),
       "needs more than 2^64"},
  };
  for (const Case& c : cases) {
    auto st = ParseSafetensors(c.bytes, "f.st");
    ASSERT_FALSE(st.ok()) << c.want;
    EXPECT_EQ(st.status().code(), StatusCode::kDataLoss) << c.want;
    EXPECT_NE(st.status().message().find(c.want), std::string::npos) << st.status().message();
    EXPECT_NE(st.status().message().find("f.st"), std::string::npos) << st.status().message();
  }
  // Zero-size tensors may share an offset; trailing spaces pad the header.
  auto ok = ParseSafetensors(Image(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},)"
                                   R"("b":{"dtype":"I8","shape":[0,3],"data_offsets":[0,0]}}   )",
                                   0),
                             "f.st");
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
}

TEST(SafetensorsTest, WriterRejectsWhatTheFormatCannotHold) {
  EXPECT_FALSE(SerializeSafetensors({{"s", Tensor::Scalar<std::string>("x")}}).ok());
  EXPECT_FALSE(SerializeSafetensors({{"a", Iota(DType::kInt8, Shape{1})}, {"a", Iota(DType::kInt8, Shape{1})}}).ok());
  EXPECT_FALSE(SerializeSafetensors({{"__metadata__", Iota(DType::kInt8, Shape{1})}}).ok());
}

}  // namespace
}  // namespace strata::io
