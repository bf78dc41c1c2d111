// libFuzzer target for the TFRecord reader (plain, ZLIB, GZIP; strict and skip-corrupt) and for the element
// decoder of the file cache, whose files are TFRecords. The first byte picks the mode; the rest is the file.
// Build: make fuzz; run: build-fuzz/fuzz/tfrecord_fuzz fuzz/corpus/tfrecord. fuzz/replay_main.cc replays the corpus
// as a normal test.
#include <cstddef>
#include <cstdint>
#include <string>

#include "data/dataset_impl.h"
#include "io/tfrecord.h"

namespace {

void ReadAll(std::string data, strata::io::Compression c, bool skip_corrupt, bool use_skip) {
  strata::io::TfRecordReaderOptions o;
  o.compression = c;
  o.skip_corrupt = skip_corrupt;
  o.buffer_size = 64;  // tiny buffer: exercise refills and growth
  strata::io::TfRecordReader reader(
      strata::io::DecompressingInput(strata::io::MemoryInput(std::move(data), "fuzz"), c, 64), o);
  std::string record, rebuilt;
  // Every read either consumes input or ends, so the loop is bounded by the input size; the cap is a safety net.
  for (int i = 0; i < 100000; ++i) {
    auto more = use_skip && (i % 2 == 1) ? reader.SkipRecord(i % 4 == 1) : reader.ReadRecord(&record);
    if (!more.ok() || !*more) break;
    if (!use_skip || i % 2 == 0) {
      // A record that passed both CRCs frames back to bytes the reader accepts again.
      rebuilt.clear();
      strata::io::AppendTfRecord(&rebuilt, record);
      strata::io::TfRecordReader again(strata::io::MemoryInput(rebuilt), {});
      std::string same;
      auto ok = again.ReadRecord(&same);
      if (!ok.ok() || !*ok || same != record) __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((mode & 0x0F) == 0x0F) {  // the file cache's element encoding
    strata::data::Element e;
    if (strata::data::internal::DeserializeElement(body, &e).ok()) {
      // What decodes re-encodes to bytes that decode and re-encode identically.
      std::string once, twice;
      strata::data::internal::SerializeElement(e, &once);
      strata::data::Element back;
      if (!strata::data::internal::DeserializeElement(once, &back).ok()) __builtin_trap();
      strata::data::internal::SerializeElement(back, &twice);
      if (once != twice) __builtin_trap();
    }
    return 0;
  }
  const auto c = static_cast<strata::io::Compression>((mode & 0x03) % 3);
  ReadAll(std::move(body), c, (mode & 0x04) != 0, (mode & 0x08) != 0);
  return 0;
}
