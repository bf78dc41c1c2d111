// Sources: tensor slices, TFRecord files (metadata, corrupt records, parallel reads), list_files, IDX, image
// folders and CSV.
#include <fstream>
#include <set>

#include "core/file_util.h"
#include "data_test_util.h"
#include "io/image_codec.h"
#include "io/tfrecord.h"

namespace strata::data {
namespace {

using testing::Collect;
using testing::Ints;
using testing::Iota;
using testing::TempPath;

// Writes `n` records "<tag>-<i>" to a new TFRecord file and returns its path.
std::string WriteRecords(const std::string& name, const std::string& tag, int n, const std::string& compression = "") {
  const std::string path = TempPath(name);
  io::TfRecordWriterOptions o;
  o.compression = *io::ParseCompression(compression);
  auto w = io::TfRecordWriter::Open(path, o);
  EXPECT_TRUE(w.ok());
  for (int i = 0; i < n; ++i) EXPECT_TRUE((*w)->Write(StrCat(tag, "-", i)).ok());
  EXPECT_TRUE((*w)->Close().ok());
  return path;
}

std::vector<std::string> Records(const std::vector<Element>& elements) {
  std::vector<std::string> out;
  for (const Element& e : elements) out.push_back(e.Get("record")->data<std::string>()[0]);
  return out;
}

TEST(TensorSlicesTest, SlicesRowsAndRejectsMismatches) {
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{3, 2});
  auto rows = Collect(Dataset::FromTensorSlices({{"x", x}, {"y", Tensor::FromVector<int64_t>({7, 8, 9})}}));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].Get("x")->ToVector<float>(), (std::vector<float>{3, 4}));
  EXPECT_EQ(rows[2].Get("y")->data<int64_t>()[0], 9);
  auto bad = Dataset::FromTensorSlices({{"x", x}, {"y", Tensor::FromVector<int64_t>({7, 8})}}).MakeIterator();
  EXPECT_NE(bad.status().message().find("tensor 'y' has 2 rows, the first tensor has 3"), std::string::npos);
  EXPECT_FALSE(Dataset::FromTensorSlices({{"s", Tensor::Scalar<float>(1)}}).MakeIterator().ok());
  EXPECT_FALSE(Dataset().MakeIterator().ok());
}

TEST(TfRecordDatasetTest, RecordsCarrySourceRecordAndOffset) {
  const std::string a = WriteRecords("a.tfrecord", "a", 3);
  const std::string b = WriteRecords("b.tfrecord.gz", "b", 2, "GZIP");
  auto plain = Collect(Dataset::TfRecord({a}));
  EXPECT_EQ(Records(plain), (std::vector<std::string>{"a-0", "a-1", "a-2"}));
  EXPECT_EQ(plain[2].meta().at(kMetaSource), a);
  EXPECT_EQ(plain[2].meta().at(kMetaRecord), "2");
  EXPECT_EQ(plain[2].meta().at(kMetaOffset), "38");  // two 19-byte records before it
  EXPECT_EQ(plain[1].Describe(), "record 1 (offset 19) of '" + a + "'");
  auto gz = Collect(Dataset::TfRecord({b}, {.compression = "GZIP"}));
  EXPECT_EQ(Records(gz), (std::vector<std::string>{"b-0", "b-1"}));
  EXPECT_FALSE(Dataset::TfRecord({a}, {.compression = "LZ4"}).MakeIterator().ok());
}

TEST(TfRecordDatasetTest, ParallelReadsAlternateFilesOneRecordEach) {
  const std::string f0 = WriteRecords("p0.tfrecord", "x", 3);
  const std::string f1 = WriteRecords("p1.tfrecord", "y", 1);
  const std::string f2 = WriteRecords("p2.tfrecord", "z", 2);
  const auto seq = Records(Collect(Dataset::TfRecord({f0, f1, f2})));
  EXPECT_EQ(seq, (std::vector<std::string>{"x-0", "x-1", "x-2", "y-0", "z-0", "z-1"}));
  const auto par = Records(Collect(Dataset::TfRecord({f0, f1, f2}, {.num_parallel_reads = 2})));
  // interleave(cycle 2, block 1): x0 y0 x1, then y ends and its slot stays empty until the cursor comes back:
  // x2, z0 (opened there), x ends, z1.
  EXPECT_EQ(par, (std::vector<std::string>{"x-0", "y-0", "x-1", "x-2", "z-0", "z-1"}));
}

TEST(TfRecordDatasetTest, CorruptRecordIsDataLossOrSkippedAndCounted) {
  const std::string path = WriteRecords("corrupt.tfrecord", "r", 5);
  std::string bytes = *ReadFile(path);
  bytes[2 * 19 + 13] ^= 0x01;  // inside the data of record 2
  std::ofstream(path, std::ios::binary) << bytes;
  auto it = *Dataset::TfRecord({path}).MakeIterator();
  Element e;
  ASSERT_TRUE(*it->GetNext(&e));
  ASSERT_TRUE(*it->GetNext(&e));
  auto bad = it->GetNext(&e);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(bad.status().message().find("corrupted record at 38 in '" + path + "'"), std::string::npos)
      << bad.status().message();
  auto stats = std::make_shared<QualityStats>();
  auto skipped = Collect(Dataset::TfRecord({path}, {.skip_corrupt = true, .stats = stats}), 4);
  EXPECT_EQ(Records(skipped), (std::vector<std::string>{"r-0", "r-1", "r-3", "r-4"}));
  EXPECT_EQ(stats->ForEpoch(4).dropped.at("corrupt_record"), 1);
  // Skip with skip_corrupt verifies data, so positions agree with reading.
  auto sk = *Dataset::TfRecord({path}, {.skip_corrupt = true}).MakeIterator();
  EXPECT_EQ(*sk->Skip(2), 2);
  ASSERT_TRUE(*sk->GetNext(&e));
  EXPECT_EQ(e.Get("record")->data<std::string>()[0], "r-3");
  // A missing file is NOT_FOUND naming it.
  auto missing = *Dataset::TfRecord({TempPath("nope.tfrecord")}).MakeIterator();
  EXPECT_EQ(missing->GetNext(&e).status().code(), StatusCode::kNotFound);
}

TEST(ListFilesTest, GlobsSortsAndShufflesPerEpoch) {
  const std::string dir = TempPath("lf");
  ASSERT_TRUE(MakeDirs(dir).ok());
  for (int i = 0; i < 12; ++i) std::ofstream(dir + StrCat("/part-", 100 + i, ".rec")) << "x";
  std::ofstream(dir + "/other.txt") << "x";
  auto names = [](const std::vector<Element>& es) {
    std::vector<std::string> out;
    for (const Element& e : es) out.push_back(Basename(e.Get("filename")->data<std::string>()[0]));
    return out;
  };
  auto sorted = names(Collect(Dataset::ListFiles({dir + "/*.rec"}, /*shuffle=*/false)));
  ASSERT_EQ(sorted.size(), 12u);
  EXPECT_EQ(sorted.front(), "part-100.rec");
  EXPECT_TRUE(std::is_sorted(sorted.begin(), sorted.end()));
  auto shuffled = Dataset::ListFiles({dir + "/*.rec"}, true, 7);
  EXPECT_EQ(names(Collect(shuffled, 0)), names(Collect(shuffled, 0)));
  EXPECT_NE(names(Collect(shuffled, 0)), names(Collect(shuffled, 1)));
  EXPECT_NE(names(Collect(shuffled, 0)), sorted);
  auto none = Dataset::ListFiles({dir + "/*.nothing"}).MakeIterator();
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
}

TEST(IdxDatasetTest, ImagesAndLabelsWithSkip) {
  const std::string images = TempPath("imgs.idx"), labels = TempPath("labels.idx.gz");
  ASSERT_EQ(testing::RunPython("import numpy as np, gzip, struct\n"
                               "a = (np.arange(6*4*5) % 251).astype(np.uint8)\n"
                               "open('" + images + "', 'wb').write(b'\\0\\0\\x08\\x03' + struct.pack('>3I', 6, 4, 5) + a.tobytes())\n"
                               "gzip.open('" + labels + "', 'wb').write(b'\\0\\0\\x08\\x01' + struct.pack('>I', 6) + bytes([5, 0, 9, 3, 3, 1]))\n"),
            0);
  auto all = Collect(Dataset::Idx(images, labels));
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all[0].Get("image")->TypeString(), "uint8[4,5,1]");
  EXPECT_EQ(all[1].Get("image")->data<uint8_t>()[0], 20);
  EXPECT_EQ(Ints(all, "label"), (std::vector<int64_t>{5, 0, 9, 3, 3, 1}));
  EXPECT_EQ(all[4].meta().at(kMetaRecord), "4");
  auto it = *Dataset::Idx(images, labels).MakeIterator();
  EXPECT_EQ(*it->Skip(4), 4);
  Element e;
  ASSERT_TRUE(*it->GetNext(&e));
  EXPECT_EQ(e.Get("label")->data<int64_t>()[0], 3);
  EXPECT_EQ(e.Get("image")->data<uint8_t>()[0], 80);
  const std::string short_labels = TempPath("short.idx");
  ASSERT_EQ(testing::RunPython("import struct\nopen('" + short_labels +
                               "', 'wb').write(b'\\0\\0\\x08\\x01' + struct.pack('>I', 5) + bytes(5))\n"),
            0);
  EXPECT_NE(Dataset::Idx(images, short_labels).MakeIterator().status().message().find("has 6 items but"),
            std::string::npos);
}

TEST(ImageFolderTest, ClassesFromSubfoldersAndDecodeErrorsNameTheFile) {
  const std::string dir = TempPath("folder");
  for (const char* c : {"cat", "dog", "emu"}) ASSERT_TRUE(MakeDirs(dir + "/" + c).ok());
  Tensor img = Tensor::Zeros(DType::kUInt8, Shape{4, 6, 3});
  img.data<uint8_t>()[5] = 200;
  std::ofstream(dir + "/cat/a.png", std::ios::binary) << *io::EncodePng(img);
  std::ofstream(dir + "/cat/b.JPG", std::ios::binary) << *io::EncodeJpeg(img);
  std::ofstream(dir + "/dog/c.png", std::ios::binary) << *io::EncodePng(img);
  std::ofstream(dir + "/dog/notes.txt") << "ignored";
  std::ofstream(dir + "/emu/broken.png", std::ios::binary) << "\x89PNG\r\n\x1a\n garbage";
  EXPECT_EQ(*Dataset::ImageFolderClasses(dir), (std::vector<std::string>{"cat", "dog", "emu"}));
  auto raw = Collect(Dataset::ImageFolder(dir));
  ASSERT_EQ(raw.size(), 4u);
  EXPECT_EQ(Ints(raw, "label"), (std::vector<int64_t>{0, 0, 1, 2}));
  EXPECT_EQ(raw[2].Get("class")->data<std::string>()[0], "dog");
  auto decoded = Dataset::ImageFolder(dir).Map(image::DecodeFn("image/encoded", "image", 3), {.name = "decode"});
  auto it = *decoded.MakeIterator();
  Element e;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(*it->GetNext(&e));
    EXPECT_EQ(e.Get("image")->TypeString(), "uint8[4,6,3]");
    EXPECT_EQ(e.Find("image/encoded"), nullptr);
  }
  auto bad = it->GetNext(&e);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("decode on '" + dir + "/emu/broken.png': 'image/encoded': truncated PNG"),
            std::string::npos)
      << bad.status().message();
  // ...or dropped and counted.
  auto stats = std::make_shared<QualityStats>();
  EXPECT_EQ(Collect(decoded.IgnoreErrors(stats)).size(), 3u);
  EXPECT_EQ(stats->TotalDropped("error: DATA_LOSS"), 1);
}

TEST(ImageFolderTest, ShuffleSeedMixesTheClassesInOneSeededOrder) {
  const std::string dir = TempPath("folder_shuffled");
  const Tensor img = Tensor::Zeros(DType::kUInt8, Shape{2, 2, 1});
  const std::string png = *io::EncodePng(img);
  std::vector<std::string> sorted;  // the unshuffled order: class folders sorted, files sorted within each
  for (const char* c : {"a", "b", "c"}) {
    ASSERT_TRUE(MakeDirs(dir + "/" + c).ok());
    for (int i = 0; i < 20; ++i) {
      const std::string path = StrCat(dir, "/", c, "/", i < 10 ? "0" : "", i, ".png");
      std::ofstream(path, std::ios::binary) << png;
      sorted.push_back(path);
    }
  }
  auto sources = [](std::vector<Element> es) {
    std::vector<std::string> out;
    for (Element& e : es) out.push_back(e.meta().at(kMetaSource));
    return out;
  };
  const std::vector<Element> plain = Collect(Dataset::ImageFolder(dir));
  EXPECT_EQ(sources(plain), sorted);
  std::vector<Element> first = Collect(Dataset::ImageFolder(dir, {.shuffle_seed = 7}));
  ASSERT_EQ(first.size(), 60u);
  // A permutation of the same files, each with its own folder's label...
  std::vector<std::string> got = sources(first);
  EXPECT_NE(got, sorted);
  std::vector<std::string> got_sorted = got;
  std::sort(got_sorted.begin(), got_sorted.end());
  EXPECT_EQ(got_sorted, sorted);
  for (Element& e : first) {
    const std::string folder = e.meta().at(kMetaSource).substr(dir.size() + 1, 1);
    EXPECT_EQ(e.Get("label")->data<int64_t>()[0], folder[0] - 'a') << e.meta().at(kMetaSource);
  }
  // ...whose first 20 hold every class (sorted, they are all class 0)...
  const std::vector<int64_t> labels = Ints(first, "label");
  EXPECT_EQ(std::set<int64_t>(labels.begin(), labels.begin() + 20), (std::set<int64_t>{0, 1, 2}));
  // ...the same for the same seed, another for another seed.
  EXPECT_EQ(sources(Collect(Dataset::ImageFolder(dir, {.shuffle_seed = 7}))), got);
  EXPECT_NE(sources(Collect(Dataset::ImageFolder(dir, {.shuffle_seed = 8}))), got);
}

TEST(CsvDatasetTest, QuotingTypesDefaultsAndErrors) {
  const std::string path = TempPath("t.csv");
  std::ofstream(path) << "id,name,score\r\n1,\"Smith, J\",0.5\n2,\"say \"\"hi\"\"\nthere\",\n\n3,plain,2e3\n";
  CsvOptions o;
  o.column_types = {{"id", DType::kInt64}, {"score", DType::kFloat32}};
  o.defaults = {{"score", "-1"}};
  auto rows = Collect(Dataset::Csv({path}, o));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(Ints(rows, "id"), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(rows[0].Get("name")->data<std::string>()[0], "Smith, J");
  EXPECT_EQ(rows[1].Get("name")->data<std::string>()[0], "say \"hi\"\nthere");
  EXPECT_EQ(rows[1].Get("score")->data<float>()[0], -1.0f);
  EXPECT_EQ(rows[2].Get("score")->data<float>()[0], 2000.0f);
  EXPECT_EQ(rows[2].meta().at("line"), "6");
  o.select_columns = {"score", "id"};
  auto sel = Collect(Dataset::Csv({path}, o));
  EXPECT_EQ(sel[0].tensors[0].first, "score");
  EXPECT_EQ(sel[0].tensors.size(), 2u);

  const std::string bad = TempPath("bad.csv");
  std::ofstream(bad) << "a,b\n1,2\nx,3\n4\n";
  CsvOptions ints;
  ints.column_types = {{"a", DType::kInt64}, {"b", DType::kInt64}};
  auto it = *Dataset::Csv({bad}, ints).MakeIterator();
  Element e;
  ASSERT_TRUE(*it->GetNext(&e));
  auto r = it->GetNext(&e);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("csv '" + bad + "' line 3 column 'a': expected an integer, found \"x\""),
            std::string::npos)
      << r.status().message();
  r = it->GetNext(&e);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 4: expected 2 fields, found 1"), std::string::npos) << r.status().message();
  EXPECT_FALSE(*it->GetNext(&e));
}

TEST(GeneratorTest, OneGeneratorPerIteration) {
  int made = 0;
  auto ds = Dataset::FromGenerator([&made]() -> Dataset::GeneratorFn {
    ++made;
    auto n = std::make_shared<int>(0);
    return [n](Element* e) -> StatusOr<bool> {
      if (*n >= 3) return false;
      e->Set("value", Tensor::Scalar<int64_t>((*n)++));
      return true;
    };
  });
  EXPECT_EQ(Ints(Collect(ds.Repeat(2))), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(made, 2);
}

}  // namespace
}  // namespace strata::data
