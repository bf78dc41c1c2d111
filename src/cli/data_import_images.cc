// `strata data import-images DIR --out PREFIX [--shards N]`: an image folder (one class per subfolder) to TFRecord
// Examples with image/encoded (the file's bytes, unchanged), image/format, image/shape, label and
// image/class/text. Every image is decoded once to check it; corrupt ones are dropped and counted.
#include <cstdio>

#include "cli/commands.h"
#include "cli/data_commands.h"
#include "io/image_codec.h"
#include "strata/data.h"

namespace strata::cli {
namespace {

struct ImportImagesOptions {
  std::string dir, out, compression;
  int64_t shards = 1;
};

data::MapFn CheckAndEncode() {
  return [](data::Element& e) -> Status {
    STRATA_ASSIGN_OR_RETURN(Tensor bytes, e.Get("image/encoded"));
    const std::string& b = bytes.data<std::string>()[0];
    STRATA_ASSIGN_OR_RETURN(Tensor image, io::DecodeImage(b, 0, "image"));
    io::Example ex;
    ex.features["image/encoded"] = io::Feature::Bytes({b});
    ex.features["image/format"] = io::Feature::Bytes({io::SniffImageFormat(b) == io::ImageFormat::kJpeg ? "jpeg" : "png"});
    ex.features["image/shape"] = io::Feature::Int64s(image.shape().ToVector());
    ex.features["label"] = io::Feature::Int64s({e.Get("label")->data<int64_t>()[0]});
    ex.features["image/class/text"] = io::Feature::Bytes({e.Get("class")->data<std::string>()[0]});
    e.Set("record", Tensor::Scalar<std::string>(io::SerializeExample(ex)));
    e.Erase("image/encoded");
    return Status::OK();
  };
}

Status RunImportImages(const ImportImagesOptions& o) {
  STRATA_ASSIGN_OR_RETURN(auto compression, io::ParseCompression(o.compression));
  STRATA_ASSIGN_OR_RETURN(auto classes, data::Dataset::ImageFolderClasses(o.dir));
  auto stats = std::make_shared<data::QualityStats>();
  // Shards are assigned round-robin (the total is unknown until the end).
  auto ds = data::Dataset::ImageFolder(o.dir)
                .Map(CheckAndEncode(), {.num_parallel_calls = DataThreads(), .name = "check image"})
                .IgnoreErrors(stats);
  STRATA_ASSIGN_OR_RETURN(auto it, ds.MakeIterator());
  STRATA_ASSIGN_OR_RETURN(auto writer, ShardedWriter::Open(o.out, o.shards, compression));
  std::map<int64_t, int64_t> histogram;
  int64_t n = 0;
  data::Element e;
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(bool more, it->GetNext(&e));
    if (!more) break;
    STRATA_RETURN_IF_ERROR(writer->Write(n % o.shards, e.Get("record")->data<std::string>()[0]));
    ++histogram[e.Get("label")->data<int64_t>()[0]];
    ++n;
  }
  STRATA_RETURN_IF_ERROR(writer->Close());
  std::printf("wrote %lld examples from %zu classes to %lld file%s: %s%s\n", static_cast<long long>(n), classes.size(),
              static_cast<long long>(o.shards), o.shards == 1 ? "" : "s", writer->paths().front().c_str(),
              o.shards > 1 ? " ..." : "");
  std::printf("dropped %lld unreadable images\nclass histogram (label):\n", static_cast<long long>(stats->TotalDropped()));
  for (const auto& [label, count] : histogram)
    std::printf("  %lld %s: %lld\n", static_cast<long long>(label), classes[static_cast<size_t>(label)].c_str(),
                static_cast<long long>(count));
  return Status::OK();
}

}  // namespace

void AddDataImportImagesCommand(CLI::App& data) {
  auto o = std::make_shared<ImportImagesOptions>();
  auto* cmd = data.add_subcommand("import-images", "Convert an image folder (one class per subfolder) to TFRecords");
  cmd->add_option("dir", o->dir, "Folder with one subfolder of JPEG/PNG images per class")->required();
  cmd->add_option("--out", o->out, "Output prefix: PREFIX-00000-of-0000N.tfrecord")->required();
  cmd->add_option("--shards", o->shards, "Number of output files")->capture_default_str();
  cmd->add_option("--compression", o->compression, "\"\", ZLIB or GZIP");
  cmd->callback([o] {
    Status s = RunImportImages(*o);
    if (!s.ok()) ReportError(s);
  });
}

}  // namespace strata::cli
