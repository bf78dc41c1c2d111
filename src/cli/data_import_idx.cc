// `strata data import-idx --images F --labels F --out PREFIX [--shards N] [--encoding png|raw]`: IDX (MNIST format)
// to TFRecord files of tf.train.Example with features image/encoded (PNG) or image (raw bytes), image/shape and
// label (int64). Records go to shards in contiguous blocks, in the IDX order.
#include <cstdio>

#include "cli/commands.h"
#include "cli/data_commands.h"
#include "io/idx.h"
#include "io/image_codec.h"
#include "strata/data.h"

namespace strata::cli {
namespace {

struct ImportIdxOptions {
  std::string images, labels, out, encoding = "png", compression;
  int64_t shards = 1;
};

// Turns an IDX element (image uint8 [H, W, 1], label) into a serialized Example in tensor "record".
data::MapFn EncodeExample(bool png) {
  return [png](data::Element& e) -> Status {
    STRATA_ASSIGN_OR_RETURN(Tensor image, e.Get("image"));
    STRATA_ASSIGN_OR_RETURN(Tensor label, e.Get("label"));
    if (image.dtype() != DType::kUInt8 || image.rank() != 3)
      return InvalidArgumentError("import-idx expects uint8 images [H, W] or [H, W, C], got ", image.TypeString());
    io::Example ex;
    if (png) {
      STRATA_ASSIGN_OR_RETURN(std::string encoded, io::EncodePng(image));
      ex.features["image/encoded"] = io::Feature::Bytes({std::move(encoded)});
    } else {
      ex.features["image"] =
          io::Feature::Bytes({std::string(static_cast<const char*>(image.raw_data()), image.byte_size())});
    }
    ex.features["image/shape"] = io::Feature::Int64s(image.shape().ToVector());
    ex.features["label"] = io::Feature::Int64s({label.data<int64_t>()[0]});
    e.tensors.clear();
    e.Set("record", Tensor::Scalar<std::string>(io::SerializeExample(ex)));
    e.Set("label", label);
    return Status::OK();
  };
}

Status RunImportIdx(const ImportIdxOptions& o) {
  if (o.encoding != "png" && o.encoding != "raw")
    return InvalidArgumentError("--encoding must be png or raw, got '", o.encoding, "'");
  STRATA_ASSIGN_OR_RETURN(auto compression, io::ParseCompression(o.compression));
  STRATA_ASSIGN_OR_RETURN(auto header, io::IdxReader::Open(o.images));
  const int64_t total = header->num_items();
  header.reset();
  auto ds = data::Dataset::Idx(o.images, o.labels)
                .Map(EncodeExample(o.encoding == "png"), {.num_parallel_calls = DataThreads(), .name = "encode"});
  STRATA_ASSIGN_OR_RETURN(auto it, ds.MakeIterator());
  STRATA_ASSIGN_OR_RETURN(auto writer, ShardedWriter::Open(o.out, o.shards, compression));
  std::map<int64_t, int64_t> histogram;
  int64_t n = 0;
  data::Element e;
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(bool more, it->GetNext(&e));
    if (!more) break;
    STRATA_RETURN_IF_ERROR(writer->Write(n * o.shards / std::max<int64_t>(total, 1), e.Get("record")->data<std::string>()[0]));
    ++histogram[e.Get("label")->data<int64_t>()[0]];
    ++n;
  }
  if (n != total) return DataLossError("'", o.images, "' announces ", total, " items but holds ", n);
  STRATA_RETURN_IF_ERROR(writer->Close());
  std::printf("wrote %lld examples (%s) to %lld file%s: %s%s\nclass histogram (label):\n%s",
              static_cast<long long>(n), o.encoding == "png" ? "image/encoded PNG" : "image raw bytes",
              static_cast<long long>(o.shards), o.shards == 1 ? "" : "s", writer->paths().front().c_str(),
              o.shards > 1 ? " ..." : "", FormatHistogram(histogram).c_str());
  return Status::OK();
}

}  // namespace

void AddDataImportIdxCommand(CLI::App& data) {
  auto o = std::make_shared<ImportIdxOptions>();
  auto* cmd = data.add_subcommand("import-idx", "Convert IDX (MNIST-format) images and labels to TFRecord Examples");
  cmd->add_option("--images", o->images, "IDX images file (.gz is detected)")->required();
  cmd->add_option("--labels", o->labels, "IDX labels file")->required();
  cmd->add_option("--out", o->out, "Output prefix: PREFIX-00000-of-0000N.tfrecord")->required();
  cmd->add_option("--shards", o->shards, "Number of output files")->capture_default_str();
  cmd->add_option("--encoding", o->encoding, "png (feature image/encoded) or raw (feature image)")
      ->capture_default_str();
  cmd->add_option("--compression", o->compression, "\"\", ZLIB or GZIP");
  cmd->callback([o] {
    Status s = RunImportIdx(*o);
    if (!s.ok()) ReportError(s);
  });
}

}  // namespace strata::cli
