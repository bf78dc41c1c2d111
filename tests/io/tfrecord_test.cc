#include "io/tfrecord.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/file_util.h"
#include "core/random.h"
#include "test_util.h"

namespace strata::io {
namespace {

using testing_util::RunPython;
using testing_util::TempPath;

std::string Bytes(std::initializer_list<int> v) {
  std::string s;
  for (int b : v) s.push_back(static_cast<char>(b));
  return s;
}

// specs/tf-formats.md §1.3.
const std::string kAbcRecord = Bytes({0x03, 0, 0, 0, 0, 0, 0, 0, 0xb0, 0x99, 0x49, 0x0e, 'a', 'b', 'c', 0x6e, 0x57, 0xf1, 0x21});
const std::string kEmptyRecord = Bytes({0, 0, 0, 0, 0, 0, 0, 0, 0x29, 0x03, 0x98, 0x07, 0xd8, 0xea, 0x82, 0xa2});
// §1.5: the "abc" record compressed by Python's zlib.
const std::string kAbcGzip = Bytes({0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x63, 0x66, 0x80, 0x80, 0x0d, 0x33, 0x3d, 0xf9,
                                    0x12, 0x93, 0x92, 0xf3, 0xc2, 0x3f, 0x2a, 0x02, 0x00, 0x32, 0xa9, 0x7b, 0x39, 0x13, 0x00, 0x00, 0x00});
const std::string kAbcZlib = Bytes({0x78, 0x9c, 0x63, 0x66, 0x80, 0x80, 0x0d, 0x33, 0x3d, 0xf9, 0x12, 0x93, 0x92, 0xf3, 0xc2, 0x3f, 0x2a,
                                    0x02, 0x00, 0x1c, 0x79, 0x04, 0xa1});

std::unique_ptr<TfRecordReader> MemReader(std::string data, TfRecordReaderOptions opt = {}) {
  return std::make_unique<TfRecordReader>(DecompressingInput(MemoryInput(std::move(data), "mem"), opt.compression), opt);
}

std::vector<std::string> ReadAll(TfRecordReader& r) {
  std::vector<std::string> out;
  std::string rec;
  for (;;) {
    auto more = r.ReadRecord(&rec);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) return out;
    out.push_back(rec);
  }
}

void WriteBytes(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

TEST(TfRecordTest, FramingMatchesSpecBytes) {
  std::string out;
  AppendTfRecord(&out, "abc");
  EXPECT_EQ(out, kAbcRecord);
  out.clear();
  AppendTfRecord(&out, "");
  EXPECT_EQ(out, kEmptyRecord);
  // The first record of an event file (§1.3): 24-byte payload.
  const std::string payload = Bytes({0x09, 0x00, 0x00, 0x00, 0x40, 0xfc, 0x54, 0xd9, 0x41, 0x1a, 0x0d, 0x62, 0x72, 0x61, 0x69, 0x6e,
                                     0x2e, 0x45, 0x76, 0x65, 0x6e, 0x74, 0x3a, 0x32});
  out.clear();
  AppendTfRecord(&out, payload);
  EXPECT_EQ(out, Bytes({0x18, 0, 0, 0, 0, 0, 0, 0, 0xa3, 0x7f, 0x4b, 0x22}) + payload + Bytes({0xec, 0xed, 0x8f, 0x9d}));
}

TEST(TfRecordTest, ReadsSpecBytesPlainGzipAndZlib) {
  auto r = MemReader(kAbcRecord + kEmptyRecord);
  EXPECT_EQ(ReadAll(*r), (std::vector<std::string>{"abc", ""}));
  EXPECT_EQ(r->offset(), 35u);
  EXPECT_EQ(r->last_record_offset(), 19u);
  auto g = MemReader(kAbcGzip, {.compression = Compression::kGzip});
  EXPECT_EQ(ReadAll(*g), std::vector<std::string>{"abc"});
  auto z = MemReader(kAbcZlib, {.compression = Compression::kZlib});
  EXPECT_EQ(ReadAll(*z), std::vector<std::string>{"abc"});
  // Concatenated gzip members are one stream (TF resets the inflater at a member's end).
  auto gg = MemReader(kAbcGzip + kAbcGzip, {.compression = Compression::kGzip});
  EXPECT_EQ(ReadAll(*gg), (std::vector<std::string>{"abc", "abc"}));
}

TEST(TfRecordTest, EveryFlippedByteIsDetected) {
  for (size_t i = 0; i < kAbcRecord.size(); ++i) {
    for (int bit : {0, 7}) {
      std::string bad = kAbcRecord;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      auto r = MemReader(bad);
      std::string rec;
      auto got = r->ReadRecord(&rec);
      ASSERT_FALSE(got.ok()) << "flip of byte " << i << " bit " << bit << " was not detected";
      EXPECT_EQ(got.status().code(), StatusCode::kDataLoss);
      // A changed length either fails the header CRC or points past the end of the data.
      const std::string& m = got.status().message();
      EXPECT_TRUE(m.find("corrupted record at 0") != std::string::npos ||
                  m.find("truncated record at 0") != std::string::npos)
          << m;
    }
  }
}

TEST(TfRecordTest, ErrorsNameFileOffsetAndKind) {
  std::string two;
  AppendTfRecord(&two, "first");
  AppendTfRecord(&two, "second");
  const uint64_t second_at = 16 + 5;
  std::string bad_data = two;
  bad_data[second_at + 12 + 2] ^= 0x20;
  const std::string path = TempPath("bad_data.tfrecord");
  WriteBytes(path, bad_data);
  auto r = TfRecordReader::Open(path);
  ASSERT_TRUE(r.ok());
  std::string rec;
  ASSERT_TRUE(*(*r)->ReadRecord(&rec));
  auto got = (*r)->ReadRecord(&rec);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(got.status().message().find("corrupted record at 21 in '" + path + "'"), std::string::npos)
      << got.status().message();
  EXPECT_NE(got.status().message().find("data CRC mismatch"), std::string::npos);
  // The reader stays at the bad record.
  EXPECT_EQ((*r)->offset(), second_at);

  auto t = MemReader(two.substr(0, two.size() - 3));
  ASSERT_TRUE(*t->ReadRecord(&rec));
  got = t->ReadRecord(&rec);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("truncated record at 21"), std::string::npos) << got.status().message();

  // A GZIP file read as uncompressed: CRC error at offset 0 with TF's hint.
  auto plain = MemReader(kAbcGzip);
  got = plain->ReadRecord(&rec);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("corrupted record at 0"), std::string::npos);
  EXPECT_NE(got.status().message().find("Is this even a TFRecord file?"), std::string::npos);

  EXPECT_EQ(TfRecordReader::Open(TempPath("missing.tfrecord")).status().code(), StatusCode::kNotFound);
}

TEST(TfRecordTest, SkipCorruptCountsAndResynchronises) {
  std::string data;
  for (const char* s : {"alpha", "beta", "gamma", "delta", "epsilon"}) AppendTfRecord(&data, s);
  // Record 1: damaged payload (header intact). Record 3: damaged length field.
  const size_t r1 = 16 + 5, r2 = r1 + 16 + 4, r3 = r2 + 16 + 5;
  data[r1 + 12] ^= 1;
  data[r3 + 3] ^= 0x40;
  auto r = MemReader(data, {.skip_corrupt = true});
  EXPECT_EQ(ReadAll(*r), (std::vector<std::string>{"alpha", "gamma", "epsilon"}));
  EXPECT_EQ(r->corrupt_records(), 2);
  EXPECT_EQ(r->records_read(), 3);
  // A truncated tail counts as one more and ends the file cleanly.
  auto t = MemReader(data.substr(0, data.size() - 2), {.skip_corrupt = true});
  EXPECT_EQ(ReadAll(*t), (std::vector<std::string>{"alpha", "gamma"}));
  EXPECT_EQ(t->corrupt_records(), 3);
}

TEST(TfRecordTest, WriterRoundTripsAllCompressionsAndLargeRecords) {
  Rng rng(3);
  std::vector<std::string> records = {"", "x", std::string(1 << 20, 'q')};
  for (int i = 0; i < 200; ++i) {
    std::string s(rng.Below(3000), '\0');
    for (char& c : s) c = static_cast<char>(rng.NextU32());
    records.push_back(s);
  }
  for (Compression c : {Compression::kNone, Compression::kZlib, Compression::kGzip}) {
    const std::string path = TempPath(StrCat("rt_", static_cast<int>(c), ".tfrecord"));
    auto w = TfRecordWriter::Open(path, {.compression = c});
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    for (const auto& s : records) ASSERT_TRUE((*w)->Write(s).ok());
    ASSERT_TRUE((*w)->Close().ok());
    // A small read buffer forces the buffer to grow and refill across record boundaries.
    auto r = TfRecordReader::Open(path, {.compression = c, .buffer_size = 4096});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(ReadAll(**r), records) << CompressionName(c);
    auto n = CountTfRecords(path, c);
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(*n, static_cast<int64_t>(records.size()));
  }
}

TEST(TfRecordTest, SkipRecordMovesPastRecordsWithoutReadingThem) {
  std::string data;
  for (int i = 0; i < 10; ++i) AppendTfRecord(&data, std::string(100 * i, static_cast<char>('a' + i)));
  auto r = MemReader(data);
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(*r->SkipRecord(i % 2 == 0));
  std::string rec;
  ASSERT_TRUE(*r->ReadRecord(&rec));
  EXPECT_EQ(rec, std::string(700, 'h'));
}

TEST(TfRecordTest, TruncatedOrCorruptCompressedStreamIsDataLoss) {
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    const std::string& full = c == Compression::kGzip ? kAbcGzip : kAbcZlib;
    auto r = MemReader(full.substr(0, full.size() - 6), {.compression = c});
    std::string rec;
    auto got = r->ReadRecord(&rec);
    if (got.ok() && *got) got = r->ReadRecord(&rec);  // the record may decode before the missing trailer is noticed
    ASSERT_FALSE(got.ok()) << CompressionName(c);
    EXPECT_EQ(got.status().code(), StatusCode::kDataLoss);
    std::string garbage = full;
    garbage[12] ^= 0xFF;
    auto g = MemReader(garbage, {.compression = c});
    got = g->ReadRecord(&rec);
    EXPECT_FALSE(got.ok() && *got && rec == "abc") << CompressionName(c);
  }
}

// Python (zlib, gzip and a CRC-32C written in the test) reads what we write, and we read what it writes.
TEST(TfRecordTest, IndependentPythonReaderAndWriterAgree) {
  const std::string ours = TempPath("ours.tfrecord.gz");
  auto w = TfRecordWriter::Open(ours, {.compression = Compression::kGzip});
  ASSERT_TRUE(w.ok());
  for (int i = 0; i < 50; ++i) ASSERT_TRUE((*w)->Write(std::string(i, static_cast<char>(i))).ok());
  ASSERT_TRUE((*w)->Close().ok());
  const std::string theirs = TempPath("theirs.tfrecord.zz");
  ASSERT_EQ(RunPython(std::string(testing_util::kPythonTfRecord) +
                      "import gzip, zlib\n"
                      "recs = unframe(gzip.decompress(open('" + ours + "', 'rb').read()))\n"
                      "assert recs == [bytes([i]) * i for i in range(50)], len(recs)\n"
                      "out = b''.join(frame(bytes(range(i % 256)) * 3) for i in range(300))\n"
                      "open('" + theirs + "', 'wb').write(zlib.compress(out, 9))\n"),
            0);
  auto r = TfRecordReader::Open(theirs, {.compression = Compression::kZlib});
  ASSERT_TRUE(r.ok());
  auto recs = ReadAll(**r);
  ASSERT_EQ(recs.size(), 300u);
  std::string expect;
  for (int i = 0; i < 255; ++i) expect.push_back(static_cast<char>(i));  // range(255)
  EXPECT_TRUE(recs[255] == expect + expect + expect);
  EXPECT_TRUE(recs[0].empty());
}

TEST(TfRecordTest, StartOffsetLetsATailerRetryATruncatedRecord) {
  std::string data;
  AppendTfRecord(&data, "first");
  AppendTfRecord(&data, "second");
  const std::string path = TempPath("tail.tfrecord");
  WriteBytes(path, data.substr(0, data.size() - 5));  // the writer is still writing "second"
  auto r = *TfRecordReader::Open(path);
  std::string rec;
  ASSERT_TRUE(*r->ReadRecord(&rec));
  auto cut = r->ReadRecord(&rec);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("truncated record at 21"), std::string::npos);
  const uint64_t resume = r->offset();
  EXPECT_EQ(resume, 21u);
  WriteBytes(path, data);  // the rest has arrived
  for (Compression c : {Compression::kNone, Compression::kGzip}) {
    const std::string file = c == Compression::kNone ? path : TempPath("tail.tfrecord.gz");
    if (c == Compression::kGzip) {
      auto w = TfRecordWriter::Open(file, {.compression = c});
      ASSERT_TRUE((*w)->Write("first").ok() && (*w)->Write("second").ok() && (*w)->Close().ok());
    }
    auto again = TfRecordReader::Open(file, {.compression = c, .start_offset = resume});
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    ASSERT_TRUE(*(*again)->ReadRecord(&rec));
    EXPECT_EQ(rec, "second");
    EXPECT_EQ((*again)->last_record_offset(), 21u);
    EXPECT_FALSE(*(*again)->ReadRecord(&rec));
  }
  EXPECT_EQ(TfRecordReader::Open(path, {.start_offset = 1000}).status().code(), StatusCode::kOutOfRange);
}

TEST(TfRecordTest, AtomicWriterPublishesOnlyOnClose) {
  const std::string path = TempPath("atomic.tfrecord");
  {
    auto w = TfRecordWriter::Open(path, {.atomic = true});
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Write("abc").ok());
    EXPECT_FALSE(FileExists(path));
  }  // destroyed unclosed: abandoned
  EXPECT_FALSE(FileExists(path));
  auto w = TfRecordWriter::Open(path, {.atomic = true});
  ASSERT_TRUE((*w)->Write("abc").ok());
  ASSERT_TRUE((*w)->Close().ok());
  auto bytes = ReadFile(path);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, kAbcRecord);
}

}  // namespace
}  // namespace strata::io
