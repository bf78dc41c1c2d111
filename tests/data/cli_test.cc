// The `strata data` commands, run as a user would; their output files are checked with independent readers
// (Python: struct framing, protobuf over the independent descriptor, numpy, PIL).
#include <sys/wait.h>

#include <cstdio>
#include <fstream>

#include "core/file_util.h"
#include "data_test_util.h"
#include "io/image_codec.h"
#include "io/tfrecord.h"
#include "strata/example.h"

namespace strata::data {
namespace {

using testing::RunPython;
using testing::SourcePath;
using testing::TempPath;

const std::string kFashion = "/usr/share/datasets/fashion-mnist/";

struct Result {
  int code = -1;
  std::string out;  // stdout and stderr
};

Result Strata(const std::string& args) {
  Result r;
  FILE* p = ::popen((std::string(STRATA_BINARY) + " " + args + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Python that reads TFRecord framing (without CRCs: the C++ tests check those) and Examples through the
// independent descriptor.
std::string PythonExampleReader() {
  return "import struct, glob\n"
         "from google.protobuf import descriptor_pb2, descriptor_pool, text_format, message_factory\n"
         "fdp = text_format.Parse(open('" + SourcePath("tests/io/testdata/tf_example_descriptor.textproto") +
         "').read(), descriptor_pb2.FileDescriptorProto())\n"
         "pool = descriptor_pool.DescriptorPool(); pool.Add(fdp)\n"
         "Example = message_factory.MessageFactory(pool).GetPrototype(pool.FindMessageTypeByName('tensorflow.Example'))\n"
         "def records(path):\n"
         "    b = open(path, 'rb').read(); off = 0\n"
         "    while off < len(b):\n"
         "        n, = struct.unpack_from('<Q', b, off); yield b[off + 12:off + 12 + n]; off += 16 + n\n";
}

TEST(DataCliTest, ImportIdxOnFashionMnistGivesAllExamplesBalancedAndPixelExact) {
  if (!FileExists(kFashion + "train-images-idx3-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const std::string out = TempPath("fmnist/");
  ASSERT_TRUE(MakeDirs(out).ok());
  auto train = Strata("data import-idx --images " + kFashion + "train-images-idx3-ubyte.gz --labels " + kFashion +
                      "train-labels-idx1-ubyte.gz --out " + out + "train --shards 4 --encoding png");
  ASSERT_EQ(train.code, 0) << train.out;
  EXPECT_NE(train.out.find("wrote 60000 examples"), std::string::npos) << train.out;
  auto test = Strata("data import-idx --images " + kFashion + "t10k-images-idx3-ubyte.gz --labels " + kFashion +
                     "t10k-labels-idx1-ubyte.gz --out " + out + "test --encoding raw");
  ASSERT_EQ(test.code, 0) << test.out;
  // Independent check: count per class, and compare every 97th image with the IDX pixels (numpy) through PIL.
  ASSERT_EQ(RunPython(PythonExampleReader() +
                      "import gzip, io, numpy as np\nfrom PIL import Image\n"
                      "def idx(path):\n"
                      "    b = gzip.open(path).read(); nd = b[3]\n"
                      "    dims = struct.unpack('>' + 'I' * nd, b[4:4 + 4 * nd])\n"
                      "    return np.frombuffer(b, np.uint8, offset=4 + 4 * nd).reshape(dims)\n"
                      "for split, files, n, per, key in [('train', sorted(glob.glob('" + out + "train-*-of-00004.tfrecord')), 60000, 6000, 'image/encoded'),\n"
                      "                                  ('t10k', ['" + out + "test-00000-of-00001.tfrecord'], 10000, 1000, 'image')]:\n"
                      "    assert len(files) == (4 if split == 'train' else 1), files\n"
                      "    images = idx('" + kFashion + "' + split + '-images-idx3-ubyte.gz')\n"
                      "    labels = idx('" + kFashion + "' + split + '-labels-idx1-ubyte.gz')\n"
                      "    counts = [0] * 10; i = 0\n"
                      "    for f in files:\n"
                      "        for r in records(f):\n"
                      "            e = Example.FromString(r).features.feature\n"
                      "            lab = e['label'].int64_list.value[0]\n"
                      "            assert lab == labels[i], (split, i, lab, labels[i])\n"
                      "            assert list(e['image/shape'].int64_list.value) == [28, 28, 1]\n"
                      "            counts[lab] += 1\n"
                      "            if i % 97 == 0:\n"
                      "                raw = e[key].bytes_list.value[0]\n"
                      "                px = np.asarray(Image.open(io.BytesIO(raw))) if key == 'image/encoded' else np.frombuffer(raw, np.uint8).reshape(28, 28)\n"
                      "                assert (px.reshape(28, 28) == images[i]).all(), (split, i)\n"
                      "            i += 1\n"
                      "    assert i == n, (split, i)\n"
                      "    assert counts == [per] * 10, counts\n"),
            0);
  // strata's own tools agree.
  auto stats = Strata("data stats '" + out + "train-*.tfrecord' --num-classes 10");
  ASSERT_EQ(stats.code, 0) << stats.out;
  EXPECT_NE(stats.out.find("examples: 60000"), std::string::npos) << stats.out;
  for (int c = 0; c < 10; ++c) EXPECT_NE(stats.out.find(StrCat("  ", c, ": 6000 (10.0%)")), std::string::npos);
  EXPECT_NE(stats.out.find("quality checks (duplicate, label_out_of_range): "), std::string::npos) << stats.out;
  auto inspect = Strata("data inspect " + out + "test-00000-of-00001.tfrecord -n 1");
  ASSERT_EQ(inspect.code, 0) << inspect.out;
  EXPECT_NE(inspect.out.find("records: 10000"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("image/shape              int64_list 3 values, in 10000 of 10000 records"),
            std::string::npos)
      << inspect.out;
  EXPECT_NE(inspect.out.find("image                    bytes_list 1 value"), std::string::npos) << inspect.out;
}

TEST(DataCliTest, ImportImagesInspectAndManifest) {
  const std::string dir = TempPath("cli_images");
  for (const char* c : {"ant", "bee"}) ASSERT_TRUE(MakeDirs(dir + "/" + c).ok());
  Tensor img = Tensor::Zeros(DType::kUInt8, Shape{5, 7, 3});
  img.data<uint8_t>()[4] = 99;
  std::ofstream(dir + "/ant/1.png", std::ios::binary) << *io::EncodePng(img);
  std::ofstream(dir + "/ant/2.jpg", std::ios::binary) << *io::EncodeJpeg(img);
  std::ofstream(dir + "/bee/3.png", std::ios::binary) << *io::EncodePng(img);
  std::ofstream(dir + "/bee/broken.jpg", std::ios::binary) << "\xff\xd8\xff garbage";
  const std::string prefix = TempPath("cli_out/imgs");
  auto r = Strata("data import-images " + dir + " --out " + prefix + " --shards 2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("wrote 3 examples from 2 classes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dropped 1 unreadable images"), std::string::npos) << r.out;
  ASSERT_EQ(RunPython(PythonExampleReader() +
                      "recs = [Example.FromString(r).features.feature for f in sorted(glob.glob('" + prefix +
                      "-*')) for r in records(f)]\n"
                      "assert len(recs) == 3\n"
                      "assert sorted(e['image/class/text'].bytes_list.value[0] for e in recs) == [b'ant', b'ant', b'bee']\n"
                      "assert sorted(e['image/format'].bytes_list.value[0] for e in recs) == [b'jpeg', b'png', b'png']\n"
                      "assert all(list(e['image/shape'].int64_list.value) == [5, 7, 3] for e in recs)\n"),
            0);
  // The manifest: JSON with the files, and a version that changes when one byte changes.
  auto m1 = Strata("data manifest '" + prefix + "-*' --out " + TempPath("cli_out/manifest.json"));
  ASSERT_EQ(m1.code, 0) << m1.out;
  EXPECT_NE(m1.out.find("\"records\": 2"), std::string::npos) << m1.out;
  ASSERT_EQ(RunPython("import json, hashlib\n"
                      "m = json.load(open('" + TempPath("cli_out/manifest.json") + "'))\n"
                      "assert len(m['files']) == 2 and m['total_records'] == 3, m\n"
                      "for f in m['files']:\n"
                      "    assert hashlib.sha256(open(m['base_dir'] + '/' + f['path'], 'rb').read()).hexdigest() == f['sha256']\n"
                      "lines = ''.join('%s\\t%d\\t%d\\t%s\\n' % (f['path'], f['bytes'], f['records'], f['sha256']) for f in m['files'])\n"
                      "assert m['version'] == 'sha256:' + hashlib.sha256(lines.encode()).hexdigest(), m['version']\n"),
            0);
  std::string bytes = *ReadFile(prefix + "-00001-of-00002.tfrecord");
  bytes[bytes.size() / 2] ^= 1;
  std::ofstream(prefix + "-00001-of-00002.tfrecord", std::ios::binary) << bytes;
  auto m2 = Strata("data manifest '" + prefix + "-*'");
  ASSERT_EQ(m2.code, 0);
  EXPECT_NE(m1.out.substr(0, 90), m2.out.substr(0, 90));  // the "version" line differs
  EXPECT_NE(m2.out.find("\"records\": -1"), std::string::npos) << m2.out;  // the damaged file is no longer valid
}

TEST(DataCliTest, ErrorsAreOneLineWithNonZeroExit) {
  const std::string bad = TempPath("cli_bad.tfrecord");
  std::ofstream(bad, std::ios::binary) << "this is not a tfrecord file at all";
  for (const std::string& args :
       {"data inspect " + bad, "data stats '" + TempPath("nothing-*") + "'",
        "data import-idx --images " + bad + " --labels " + bad + " --out " + TempPath("x"),
        "data import-images " + TempPath("no_such_dir") + " --out " + TempPath("y"),
        "data import-idx --images " + bad + " --labels " + bad + " --out " + TempPath("x") + " --encoding jpeg"}) {
    auto r = Strata(args);
    EXPECT_EQ(r.code, 1) << args << "\n" << r.out;
    EXPECT_EQ(r.out.rfind("strata: error: ", 0), 0u) << args << "\n" << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << "\n" << r.out;
  }
  auto r = Strata("data inspect " + bad);
  EXPECT_NE(r.out.find("corrupted record at 0 in '" + bad + "'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(Is this even a TFRecord file?)"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace strata::data

namespace strata::data {
namespace {

TEST(DataCliTest, StatsCountsQualityProblems) {
  // 6 examples: one exact duplicate, one label out of range, one blank raw image, one blank PNG.
  const std::string path = TempPath("cli_quality.tfrecord");
  std::string bytes;
  auto add = [&](int64_t label, uint8_t fill, bool varied, bool png) {
    Tensor img = Tensor::Empty(DType::kUInt8, Shape{4, 4, 1});
    for (int p = 0; p < 16; ++p) img.data<uint8_t>()[p] = static_cast<uint8_t>(varied ? fill + 13 * p : fill);
    io::Example ex;
    if (png) {
      ex.features["img"] = io::Feature::Bytes({*io::EncodePng(img)});
    } else {
      ex.features["img"] = io::Feature::Bytes({std::string(static_cast<const char*>(img.raw_data()), 16)});
      ex.features["image/shape"] = io::Feature::Int64s({4, 4, 1});
    }
    ex.features["label"] = io::Feature::Int64s({label});
    io::AppendTfRecord(&bytes, io::SerializeExample(ex));
  };
  add(0, 1, true, false);
  add(0, 1, true, false);  // duplicate of the first
  add(1, 2, true, true);
  add(7, 3, true, false);  // label out of range for 3 classes
  add(2, 9, false, false);  // blank
  add(2, 200, false, true);  // blank PNG
  std::ofstream(path, std::ios::binary) << bytes;
  auto r = Strata("data stats " + path + " --num-classes 3 --image-key img");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("examples: 6"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("quality checks (duplicate, label_out_of_range, blank_image): 4 of 6 would be dropped"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  blank_image: 2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  duplicate: 1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  label_out_of_range: 1\n"), std::string::npos) << r.out;
}

TEST(DataCliTest, InspectReportsTheRecordsBeforeTheDamage) {
  const std::string path = TempPath("cli_damaged.tfrecord");
  std::string bytes;
  for (int i = 0; i < 3; ++i) {
    io::Example ex;
    ex.features["label"] = io::Feature::Int64s({i});
    io::AppendTfRecord(&bytes, io::SerializeExample(ex));
  }
  bytes.resize(bytes.size() - 3);  // cut the last record short
  std::ofstream(path, std::ios::binary) << bytes;
  auto r = Strata("data inspect " + path + " -n 5");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("records: 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("label: int64_list [1]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("strata: error: truncated record at "), std::string::npos) << r.out;
}

}  // namespace
}  // namespace strata::data
