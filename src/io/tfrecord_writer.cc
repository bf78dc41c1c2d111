#include <cstring>

#include "core/logging.h"
#include "io/crc32c.h"
#include "io/tfrecord.h"

namespace strata::io {
namespace {

void PutLE32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}
void PutLE64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

void MakeHeader(std::string_view data, char header[kTfRecordHeaderBytes]) {
  PutLE64(header, data.size());
  PutLE32(header + 8, MaskCrc(Crc32c(header, 8)));
}

}  // namespace

void AppendTfRecord(std::string* out, std::string_view data) {
  char header[kTfRecordHeaderBytes];
  MakeHeader(data, header);
  char footer[kTfRecordFooterBytes];
  PutLE32(footer, MaskCrc(Crc32c(data)));
  out->append(header, sizeof(header));
  out->append(data);
  out->append(footer, sizeof(footer));
}

StatusOr<std::unique_ptr<TfRecordWriter>> TfRecordWriter::Open(const std::string& path,
                                                               const TfRecordWriterOptions& options) {
  STRATA_ASSIGN_OR_RETURN(auto file, OpenFileOutput(path, options.atomic));
  auto writer = std::make_unique<TfRecordWriter>(CompressingOutput(std::move(file), options.compression, options.level));
  writer->atomic_ = options.atomic;
  return writer;
}

TfRecordWriter::~TfRecordWriter() {
  if (!out_ || atomic_) return;  // an unclosed atomic write is abandoned by its stream
  Status s = Close();
  if (!s.ok()) LogError("closing TFRecord writer: ", s.message());
}

Status TfRecordWriter::Write(std::string_view record) {
  if (!out_) return FailedPreconditionError("TfRecordWriter::Write after Close");
  char header[kTfRecordHeaderBytes];
  MakeHeader(record, header);
  char footer[kTfRecordFooterBytes];
  PutLE32(footer, MaskCrc(Crc32c(record)));
  STRATA_RETURN_IF_ERROR(out_->Write(std::string_view(header, sizeof(header))));
  STRATA_RETURN_IF_ERROR(out_->Write(record));
  STRATA_RETURN_IF_ERROR(out_->Write(std::string_view(footer, sizeof(footer))));
  ++records_;
  return Status::OK();
}

Status TfRecordWriter::Flush() {
  if (!out_) return FailedPreconditionError("TfRecordWriter::Flush after Close");
  return out_->Flush();
}

Status TfRecordWriter::Close() {
  if (!out_) return Status::OK();
  Status s = out_->Close();
  out_.reset();
  return s;
}

}  // namespace strata::io
