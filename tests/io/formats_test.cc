// IDX, image codecs and SHA-256, each checked against an independent implementation (numpy, PIL, hashlib) or
// published test vectors.
#include <gtest/gtest.h>

#include <fstream>

#include "core/file_util.h"
#include "core/random.h"
#include "io/idx.h"
#include "io/image_codec.h"
#include "io/sha256.h"
#include "test_util.h"

namespace strata::io {
namespace {

using testing_util::RunPython;
using testing_util::TempPath;

TEST(Sha256Test, FipsVectorsAndHashlib) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  Sha256 pieces;  // one million 'a', fed in uneven pieces
  const std::string chunk(997, 'a');
  size_t done = 0;
  while (done < 1000000) {
    const size_t n = std::min<size_t>(chunk.size(), 1000000 - done);
    pieces.Update(chunk.data(), n);
    done += n;
  }
  EXPECT_EQ(pieces.FinishHex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  const std::string path = TempPath("sha.bin");
  Rng rng(5);
  std::string data(3 * 1024 * 1024 + 17, '\0');
  for (char& c : data) c = static_cast<char>(rng.NextU32());
  std::ofstream(path, std::ios::binary) << data;
  uint64_t size = 0;
  auto h = Sha256File(path, &size);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(size, data.size());
  EXPECT_EQ(*h, Sha256Hex(data));
  ASSERT_EQ(RunPython("import hashlib\nassert hashlib.sha256(open('" + path + "','rb').read()).hexdigest() == '" + *h +
                      "'\n"),
            0);
}

TEST(IdxTest, ReadsNumpyWrittenFilesPlainAndGzip) {
  const std::string u8 = TempPath("a.idx3-ubyte.gz");
  const std::string i16 = TempPath("b.idx2");
  ASSERT_EQ(RunPython("import numpy as np, gzip, struct\n"
                      "a = (np.arange(5*4*3) * 7 % 256).astype(np.uint8).reshape(5, 4, 3)\n"
                      "gzip.open('" + u8 + "', 'wb').write(b'\\0\\0\\x08\\x03' + struct.pack('>3I', 5, 4, 3) + a.tobytes())\n"
                      "b = (np.arange(6) * -1000).astype('>i2').reshape(2, 3)\n"
                      "open('" + i16 + "', 'wb').write(b'\\0\\0\\x0b\\x02' + struct.pack('>2I', 2, 3) + b.tobytes())\n"),
            0);
  auto r = IdxReader::Open(u8);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->dims(), (std::vector<int64_t>{5, 4, 3}));
  EXPECT_EQ((*r)->item_shape(), (Shape{4, 3}));
  Tensor item;
  ASSERT_TRUE(*(*r)->SkipItems(2));
  ASSERT_TRUE(*(*r)->ReadItem(&item));
  EXPECT_EQ(item.TypeString(), "uint8[4,3]");
  EXPECT_EQ(item.data<uint8_t>()[0], (24 * 7) % 256);  // element (2,0,0) = 24 * 7 mod 256
  ASSERT_TRUE(*(*r)->ReadItem(&item));
  ASSERT_TRUE(*(*r)->ReadItem(&item));
  EXPECT_FALSE(*(*r)->ReadItem(&item));
  auto all = ReadIdx(i16);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->TypeString(), "int16[2,3]");
  EXPECT_EQ(all->ToVector<int16_t>(), (std::vector<int16_t>{0, -1000, -2000, -3000, -4000, -5000}));
}

TEST(IdxTest, BadFilesGiveClearErrors) {
  const std::string bad = TempPath("bad.idx");
  std::ofstream(bad, std::ios::binary) << std::string("\x01\x02\x08\x01", 4);
  EXPECT_NE(IdxReader::Open(bad).status().message().find("is not an IDX file"), std::string::npos);
  std::ofstream(bad, std::ios::binary) << std::string("\0\0\x08\x01\0\0\0\x0a" "abc", 11);
  auto r = IdxReader::Open(bad);
  ASSERT_TRUE(r.ok());
  Tensor t;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(*(*r)->ReadItem(&t));
  auto got = (*r)->ReadItem(&t);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(got.status().message().find("truncated"), std::string::npos);
  std::ofstream(bad, std::ios::binary) << std::string("\0\0\x07\x01", 4);
  EXPECT_NE(IdxReader::Open(bad).status().message().find("unknown IDX element type code 0x07"), std::string::npos);
}

TEST(IdxTest, HeadersAreCheckedBeforeAllocating) {
  const std::string path = TempPath("hostile.idx");
  // Magic 0x00000999: int8 with 153 dimensions.
  std::ofstream(path, std::ios::binary) << std::string("\0\0\x09\x99", 4) << std::string(153 * 4, '\1');
  auto r = IdxReader::Open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("IDX file '" + path + "' declares 153 dimensions (magic 00 00 09 99)"),
            std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("at most 8"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find(",1,1,1,"), std::string::npos) << r.status().message();
  EXPECT_FALSE(ReadIdx(path).ok());

  // Items larger than the whole file: refused at Open.
  std::ofstream(path, std::ios::binary) << std::string("\0\0\x08\x03\0\0\xea\x60\0\0\0\x1c\0\0\0\x1c", 16)
                                        << std::string(100, '\0');
  r = IdxReader::Open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("declares items of uint8[28,28] (784 bytes each), but the file holds at most "
                                      "100 bytes of data"),
            std::string::npos)
      << r.status().message();

  // 4294967295 x 65535 x 65535 float64: ReadIdx must not try to allocate it.
  std::ofstream(path, std::ios::binary) << std::string("\0\0\x0e\x03\xff\xff\xff\xff\0\0\xff\xff\0\0\xff\xff", 16)
                                        << std::string(64, '\0');
  auto all = ReadIdx(path);
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.status().code(), StatusCode::kInvalidArgument) << all.status().ToString();
  EXPECT_NE(all.status().message().find("IDX file '" + path + "'"), std::string::npos) << all.status().message();

  // A million one-byte items over 10 bytes: streaming reads still report truncation item by item, but ReadIdx
  // refuses before allocating the whole.
  std::ofstream(path, std::ios::binary) << std::string("\0\0\x08\x01\0\x0f\x42\x40", 8) << std::string(10, '\7');
  all = ReadIdx(path);
  ASSERT_FALSE(all.ok());
  EXPECT_NE(all.status().message().find("declares dims [1000000] of uint8 (1000000 items of 1 bytes), more than the "
                                        "at most 10 bytes of data the file holds"),
            std::string::npos)
      << all.status().message();

  // Gzip: the data can be at most ~1032 times the compressed size.
  const std::string gz = TempPath("hostile.idx.gz");
  ASSERT_EQ(RunPython("import gzip, struct\n"
                      "gzip.open('" +
                      gz +
                      "', 'wb').write(b'\\0\\0\\x08\\x02' + struct.pack('>2I', 100000000, 1000) + "
                      "bytes(100))\n"),
            0);
  all = ReadIdx(gz);
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.status().code(), StatusCode::kInvalidArgument) << all.status().ToString();
  EXPECT_NE(all.status().message().find("declares dims [100000000,1000] of uint8"), std::string::npos)
      << all.status().message();
}

TEST(IdxTest, FashionMnistHeaders) {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  if (!FileExists(dir + "t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  auto images = IdxReader::Open(dir + "t10k-images-idx3-ubyte.gz");
  ASSERT_TRUE(images.ok());
  EXPECT_EQ((*images)->dims(), (std::vector<int64_t>{10000, 28, 28}));
  EXPECT_EQ((*images)->dtype(), DType::kUInt8);
  auto labels = ReadIdx(dir + "t10k-labels-idx1-ubyte.gz");
  ASSERT_TRUE(labels.ok());
  EXPECT_EQ(labels->TypeString(), "uint8[10000]");
  std::vector<int> hist(10);
  for (uint8_t l : labels->values<uint8_t>()) ++hist.at(l);
  for (int c : hist) EXPECT_EQ(c, 1000);
}

Tensor Pattern(int h, int w, int c) {
  Tensor t = Tensor::Empty(DType::kUInt8, Shape{h, w, c});
  uint8_t* d = t.data<uint8_t>();
  for (int i = 0; i < h * w * c; ++i) d[i] = static_cast<uint8_t>((i * 37 + (i / (w * c)) * 11) & 0xFF);
  return t;
}

TEST(ImageCodecTest, PngRoundTripAndPilAgrees) {
  for (int c : {1, 2, 3, 4}) {
    Tensor img = Pattern(7, 5, c);
    auto png = EncodePng(img);
    ASSERT_TRUE(png.ok()) << png.status().ToString();
    EXPECT_EQ(SniffImageFormat(*png), ImageFormat::kPng);
    auto back = DecodeImage(*png);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->TypeString(), img.TypeString());
    EXPECT_EQ(back->ToVector<uint8_t>(), img.ToVector<uint8_t>());
  }
  // PIL decodes our PNG to the same pixels, and we decode PIL's PNGs (gray, RGB, palette, 16-bit gray) as PIL does.
  const std::string ours = TempPath("ours.png");
  auto png = EncodePng(Pattern(6, 9, 3));
  std::ofstream(ours, std::ios::binary) << *png;
  const std::string raw = TempPath("pattern.raw");
  std::ofstream(raw, std::ios::binary) << std::string(reinterpret_cast<const char*>(Pattern(6, 9, 3).raw_data()), 6 * 9 * 3);
  const std::string pal = TempPath("pal.png"), g16 = TempPath("g16.png"), expect = TempPath("expect.raw");
  ASSERT_EQ(RunPython("from PIL import Image\nimport numpy as np\n"
                      "a = np.asarray(Image.open('" + ours + "'))\n"
                      "assert a.shape == (6, 9, 3), a.shape\n"
                      "assert a.tobytes() == open('" + raw + "', 'rb').read()\n"
                      "p = Image.fromarray((np.arange(40*30*3) % 256).astype(np.uint8).reshape(40, 30, 3)).quantize(16)\n"
                      "p.save('" + pal + "')\n"
                      "open('" + expect + "', 'wb').write(np.asarray(p.convert('RGB')).tobytes())\n"
                      "Image.fromarray((np.arange(12).reshape(3, 4) * 5000).astype(np.uint16)).save('" + g16 + "')\n"),
            0);
  auto pal_img = DecodeImage(*ReadFile(pal));
  ASSERT_TRUE(pal_img.ok()) << pal_img.status().ToString();
  EXPECT_EQ(pal_img->TypeString(), "uint8[40,30,3]");
  const std::string want = *ReadFile(expect);
  EXPECT_TRUE(std::memcmp(pal_img->raw_data(), want.data(), want.size()) == 0);
  auto g = DecodeImage(*ReadFile(g16));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->TypeString(), "uint8[3,4,1]");
  EXPECT_EQ(g->data<uint8_t>()[0], 0);
  EXPECT_EQ(g->data<uint8_t>()[11], 255 * 55000 / 65535 + (255 * 55000 % 65535 > 65535 / 2 ? 1 : 0));
}

TEST(ImageCodecTest, JpegMatchesPilDecoder) {
  const std::string src = TempPath("pil.jpg"), expect = TempPath("pil_jpg.raw"), ours = TempPath("ours.jpg");
  ASSERT_TRUE(std::ofstream(ours, std::ios::binary) << *EncodeJpeg(Pattern(32, 48, 3), 95));
  ASSERT_EQ(RunPython("from PIL import Image\nimport numpy as np\n"
                      "y, x = np.mgrid[0:64, 0:80]\n"
                      "a = np.stack([x * 3, y * 4, (x + y) * 2], -1).astype(np.uint8)\n"
                      "Image.fromarray(a).save('" + src + "', quality=90)\n"
                      "open('" + expect + "', 'wb').write(np.asarray(Image.open('" + src + "')).tobytes())\n"
                      "o = np.asarray(Image.open('" + ours + "'))\n"
                      "assert o.shape == (32, 48, 3), o.shape\n"),
            0);
  auto img = DecodeImage(*ReadFile(src));
  ASSERT_TRUE(img.ok()) << img.status().ToString();
  EXPECT_EQ(img->TypeString(), "uint8[64,80,3]");
  const std::string want = *ReadFile(expect);
  int max_diff = 0;
  for (size_t i = 0; i < want.size(); ++i)
    max_diff = std::max(max_diff, std::abs(int(img->data<uint8_t>()[i]) - int(static_cast<uint8_t>(want[i]))));
  EXPECT_LE(max_diff, 1);  // both are libjpeg-turbo; upsampling details may differ by one
  auto gray = DecodeImage(*ReadFile(src), 1);
  ASSERT_TRUE(gray.ok());
  EXPECT_EQ(gray->TypeString(), "uint8[64,80,1]");
}

TEST(ImageCodecTest, CorruptImagesGiveClearErrors) {
  auto png = *EncodePng(Pattern(16, 16, 3));
  auto jpg = *EncodeJpeg(Pattern(16, 16, 3));
  auto t = DecodeImage(png.substr(0, png.size() / 2), 0, "'a.png'");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("'a.png'"), std::string::npos) << t.status().message();
  auto j = DecodeImage(jpg.substr(0, jpg.size() / 2), 0, "'b.jpg'");
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("'b.jpg': "), std::string::npos) << j.status().message();
  auto junk = DecodeImage("hello world", 0, "record 4");
  ASSERT_FALSE(junk.ok());
  EXPECT_NE(junk.status().message().find("record 4: not a JPEG or PNG image (11 bytes, starting 68 65 6c 6c"),
            std::string::npos)
      << junk.status().message();
  // Every single flipped byte in the PNG is either detected or decodes to a same-shaped image; nothing crashes.
  for (size_t i = 0; i < png.size(); ++i) {
    std::string bad = png;
    bad[i] ^= 0x55;
    auto r = DecodeImage(bad);
    if (r.ok()) {
      EXPECT_EQ(r->rank(), 3);
    }
  }
  EXPECT_FALSE(EncodePng(Tensor::Zeros(DType::kFloat32, Shape{2, 2})).ok());
}

}  // namespace
}  // namespace strata::io
