// ComputeManifest: the dataset version the trainer stores with each checkpoint.
#include <cstdio>
#include <fstream>

#include "core/file_util.h"
#include "data_test_util.h"
#include "io/sha256.h"
#include "io/tfrecord.h"

namespace strata::data {
namespace {

using testing::TempPath;

void WriteDataset(const std::string& dir) {
  ASSERT_TRUE(MakeDirs(dir).ok());
  for (int s = 0; s < 3; ++s) {
    io::TfRecordWriterOptions o;
    o.compression = s == 2 ? io::Compression::kGzip : io::Compression::kNone;
    auto w = io::TfRecordWriter::Open(dir + StrCat("/part-", s, ".tfrecord"), o);
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 10 + s; ++i) ASSERT_TRUE((*w)->Write(StrCat("record ", s, "/", i)).ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  std::ofstream(dir + "/README.txt") << "not a tfrecord";
}

TEST(ManifestTest, FilesSizesRecordsAndAHashThatFollowsTheContent) {
  const std::string dir = TempPath("manifest/v1");
  WriteDataset(dir);
  auto m = ComputeManifest(dir + "/*");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->files.size(), 4u);
  EXPECT_EQ(m->base_dir, dir);
  EXPECT_EQ(m->files[0].path, "README.txt");
  EXPECT_EQ(m->files[0].records, -1);
  EXPECT_EQ(m->files[1].path, "part-0.tfrecord");
  EXPECT_EQ(m->files[1].records, 10);
  EXPECT_EQ(m->files[3].records, 12);  // GZIP, sniffed
  EXPECT_EQ(m->total_records, 33);
  uint64_t size = 0;
  EXPECT_EQ(m->files[2].sha256, *io::Sha256File(dir + "/part-1.tfrecord", &size));
  EXPECT_EQ(m->files[2].bytes, size);
  std::string lines;
  for (const auto& f : m->files) lines += StrCat(f.path, "\t", f.bytes, "\t", f.records, "\t", f.sha256, "\n");
  EXPECT_EQ(m->hash, io::Sha256Hex(lines));
  EXPECT_NE(m->ToJson().find("\"version\": \"sha256:" + m->hash + "\""), std::string::npos);

  // The same bytes elsewhere: the same version. One changed byte, or one file less: another version.
  const std::string moved = TempPath("manifest/v1_copy");
  WriteDataset(moved);
  EXPECT_EQ(ComputeManifest(moved + "/*")->hash, m->hash);
  std::string bytes = *ReadFile(moved + "/part-0.tfrecord");
  bytes[20] ^= 0x01;
  std::ofstream(moved + "/part-0.tfrecord", std::ios::binary) << bytes;
  auto changed = ComputeManifest(moved + "/*");
  EXPECT_NE(changed->hash, m->hash);
  EXPECT_EQ(changed->files[1].records, -1);  // the flipped byte breaks a CRC
  EXPECT_NE(ComputeManifest(dir + "/part-*")->hash, m->hash);
  EXPECT_EQ(ComputeManifest(TempPath("manifest/none-*")).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace strata::data
