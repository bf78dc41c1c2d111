#include "tf/tensor_bundle.h"

#include <snappy.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "core/file_util.h"
#include "io/crc32c.h"
#include "tensorflow/core/protobuf/tensor_bundle.pb.h"
#include "tensorflow/core/protobuf/trackable_object_graph.pb.h"

namespace strata::tf {

namespace {

constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;
constexpr size_t kFooterSize = 48;      // two max-length handles (2 x 20) padded to 40, then the 8-byte magic
constexpr size_t kBlockTrailerSize = 5;  // compression type byte + masked CRC-32C
constexpr size_t kMaxBlockBytes = size_t{1} << 30;

uint32_t DecodeFixed32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;  // little-endian hosts only (x86-64, aarch64)
}

uint64_t DecodeFixed64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Reads a varint of at most `max_bits` from [*p, end); false when it runs past end or is too long.
bool GetVarint(const char** p, const char* end, int max_bits, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < max_bits + 7 && *p < end; shift += 7) {
    const auto byte = static_cast<uint8_t>(**p);
    ++*p;
    if (shift >= 63 && (byte & 0x7e) != 0) return false;
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      if (max_bits < 64 && (v >> max_bits) != 0) return false;
      *out = v;
      return true;
    }
  }
  return false;
}

struct BlockHandle {
  uint64_t offset = 0;
  uint64_t size = 0;
};

bool GetHandle(const char** p, const char* end, BlockHandle* h) {
  return GetVarint(p, end, 64, &h->offset) && GetVarint(p, end, 64, &h->size);
}

// The contents of the block at `h`: CRC checked, decompressed.
StatusOr<std::string> ReadBlock(std::string_view file, const BlockHandle& h, std::string_view where,
                                std::string_view what) {
  if (h.offset > file.size() || h.size > file.size() - h.offset ||
      kBlockTrailerSize > file.size() - h.offset - h.size)
    return DataLossError(where, ": ", what, " block at offset ", h.offset, " size ", h.size, " (+", kBlockTrailerSize,
                         " trailer) runs past the end of the file (", file.size(), " bytes): truncated or corrupt");
  const char* data = file.data() + h.offset;
  const char* trailer = data + h.size;
  const uint32_t stored = io::UnmaskCrc(DecodeFixed32(trailer + 1));
  const uint32_t actual = io::Crc32cExtend(io::Crc32c(data, h.size), trailer, 1);
  if (stored != actual)
    return DataLossError(where, ": ", what, " block at offset ", h.offset, " has CRC-32C ", actual,
                         " but its trailer records ", stored, ": the file is corrupt");
  switch (static_cast<uint8_t>(trailer[0])) {
    case 0:
      return std::string(data, h.size);
    case 1: {
      size_t n = 0;
      if (!snappy::GetUncompressedLength(data, h.size, &n))
        return DataLossError(where, ": ", what, " block at offset ", h.offset, " is not valid Snappy data");
      if (n > kMaxBlockBytes)
        return DataLossError(where, ": ", what, " block at offset ", h.offset, " claims ", n,
                             " uncompressed bytes (more than the 1 GiB a block may hold)");
      std::string out;
      if (!snappy::Uncompress(data, h.size, &out))
        return DataLossError(where, ": ", what, " block at offset ", h.offset, " is not valid Snappy data");
      return out;
    }
    default:
      return UnimplementedError(where, ": ", what, " block at offset ", h.offset, " uses compression type ",
                                static_cast<int>(static_cast<uint8_t>(trailer[0])),
                                "; expected 0 (none) or 1 (Snappy)");
  }
}

// Appends the entries of one block to `out`.
Status ParseBlock(const std::string& block, std::string_view where, std::string_view what,
                  std::vector<std::pair<std::string, std::string>>* out) {
  if (block.size() < 4) return DataLossError(where, ": ", what, " block of ", block.size(), " bytes is too short");
  const uint32_t restarts = DecodeFixed32(block.data() + block.size() - 4);
  if (restarts == 0 || restarts > (block.size() - 4) / 4)
    return DataLossError(where, ": ", what, " block of ", block.size(), " bytes claims ", restarts,
                         " restart points");
  const char* p = block.data();
  const char* end = block.data() + block.size() - 4 - 4 * static_cast<size_t>(restarts);
  std::string key;
  while (p < end) {
    uint64_t shared, non_shared, value_len;
    if (!GetVarint(&p, end, 32, &shared) || !GetVarint(&p, end, 32, &non_shared) ||
        !GetVarint(&p, end, 32, &value_len))
      return DataLossError(where, ": ", what, " block has a truncated entry header after key '", key, "'");
    if (shared > key.size())
      return DataLossError(where, ": ", what, " block entry shares ", shared, " bytes with a ", key.size(),
                           "-byte previous key");
    if (non_shared > static_cast<uint64_t>(end - p) || value_len > static_cast<uint64_t>(end - p) - non_shared)
      return DataLossError(where, ": ", what, " block entry after key '", key, "' runs past the block");
    key.resize(shared);
    key.append(p, non_shared);
    p += non_shared;
    out->emplace_back(key, std::string(p, value_len));
    p += value_len;
  }
  return Status::OK();
}

std::string DTypeList() { return "float, double, half, bfloat16, int8/16/32/64, uint8/16/32/64, bool, string"; }

}  // namespace

DType DTypeOfTf(int tf) {
  switch (tf) {
    case 1: return DType::kFloat32;
    case 2: return DType::kFloat64;
    case 3: return DType::kInt32;
    case 4: return DType::kUInt8;
    case 5: return DType::kInt16;
    case 6: return DType::kInt8;
    case 7: return DType::kString;
    case 9: return DType::kInt64;
    case 10: return DType::kBool;
    case 14: return DType::kBFloat16;
    case 17: return DType::kUInt16;
    case 19: return DType::kFloat16;
    case 22: return DType::kUInt32;
    case 23: return DType::kUInt64;
    default: return DType::kUndefined;
  }
}

namespace {

std::string ShardName(int shard, int count) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), ".data-%05d-of-%05d", shard, count);
  return buf;
}

}  // namespace

StatusOr<std::vector<std::pair<std::string, std::string>>> ReadTable(std::string_view file, std::string_view where) {
  if (file.size() < kFooterSize)
    return DataLossError(where, ": ", file.size(), " bytes is shorter than a table footer (", kFooterSize,
                         "): truncated, or not a TensorBundle index");
  const char* footer = file.data() + file.size() - kFooterSize;
  const uint64_t magic = DecodeFixed64(footer + 40);
  if (magic != kTableMagic) {
    char hex[32];
    std::snprintf(hex, sizeof(hex), "0x%016llx", static_cast<unsigned long long>(magic));
    return DataLossError(where, ": the footer's magic number is ", hex,
                         ", expected 0xdb4775248b80fb57: not a LevelDB-format table (TensorBundle index), or "
                         "truncated");
  }
  const char* p = footer;
  BlockHandle meta, index;
  if (!GetHandle(&p, footer + 40, &meta) || !GetHandle(&p, footer + 40, &index))
    return DataLossError(where, ": the footer's block handles are malformed");
  STRATA_ASSIGN_OR_RETURN(std::string index_block, ReadBlock(file, index, where, "index"));
  std::vector<std::pair<std::string, std::string>> handles;
  STRATA_RETURN_IF_ERROR(ParseBlock(index_block, where, "index", &handles));
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [last_key, value] : handles) {
    const char* hp = value.data();
    BlockHandle h;
    if (!GetHandle(&hp, value.data() + value.size(), &h))
      return DataLossError(where, ": the index entry for key '", last_key, "' is not a block handle");
    STRATA_ASSIGN_OR_RETURN(std::string block, ReadBlock(file, h, where, "data"));
    STRATA_RETURN_IF_ERROR(ParseBlock(block, where, "data", &out));
  }
  for (size_t i = 1; i < out.size(); ++i)
    if (!(out[i - 1].first < out[i].first))
      return DataLossError(where, ": keys are not in increasing order ('", out[i - 1].first, "' then '", out[i].first,
                           "'): the table is corrupt");
  return out;
}

StatusOr<TensorBundle> TensorBundle::Open(const std::string& prefix) {
  const std::string index_path = prefix + ".index";
  if (!FileExists(index_path))
    return NotFoundError("TensorBundle index ", index_path, " does not exist (expected <prefix>.index with data "
                         "shards <prefix>.data-NNNNN-of-NNNNN beside it)");
  STRATA_ASSIGN_OR_RETURN(std::string contents, ReadRegularFile(index_path, int64_t{1} << 31));
  STRATA_ASSIGN_OR_RETURN(TensorBundle b, FromIndex(contents, prefix));
  for (int s = 0; s < b.num_shards_; ++s) {
    const std::string path = b.ShardPath(s);
    if (!FileExists(path))
      return NotFoundError(index_path, " names ", b.num_shards_, " data shard", b.num_shards_ == 1 ? "" : "s",
                           ", but shard ", s, " (", path, ") is missing");
  }
  return b;
}

StatusOr<TensorBundle> TensorBundle::FromIndex(std::string_view contents, const std::string& prefix) {
  const std::string where = prefix + ".index";
  STRATA_ASSIGN_OR_RETURN(auto kvs, ReadTable(contents, where));
  TensorBundle b;
  b.prefix_ = prefix;
  if (kvs.empty() || !kvs[0].first.empty())
    return DataLossError(where, ": the table has no BundleHeaderProto (the value under the empty key)");
  tensorflow::BundleHeaderProto header;
  if (!header.ParseFromString(kvs[0].second)) return DataLossError(where, ": the BundleHeaderProto does not parse");
  if (header.endianness() != tensorflow::BundleHeaderProto::LITTLE)
    return UnimplementedError(where, ": the bundle is big-endian; only little-endian bundles are read");
  if (header.num_shards() < 1 || header.num_shards() > 100000)
    return DataLossError(where, ": the header says ", header.num_shards(), " shards; expected 1 to 100000");
  b.num_shards_ = header.num_shards();
  for (size_t i = 1; i < kvs.size(); ++i) {
    const std::string& key = kvs[i].first;
    tensorflow::BundleEntryProto pe;
    if (!pe.ParseFromString(kvs[i].second))
      return DataLossError(where, ": the entry of tensor '", key, "' is not a BundleEntryProto");
    BundleEntry e;
    e.key = key;
    e.tf_dtype = pe.dtype();
    e.dtype = DTypeOfTf(pe.dtype());
    e.sliced = pe.slices_size() > 0;
    if (pe.shape().unknown_rank())
      return DataLossError(where, ": tensor '", key, "' has unknown rank; bundle entries have full shapes");
    for (const auto& d : pe.shape().dim()) {
      if (d.size() < 0) return DataLossError(where, ": tensor '", key, "' has a negative dimension ", d.size());
      e.shape.PushBack(d.size());
    }
    e.shard_id = pe.shard_id();
    e.offset = pe.offset();
    e.size = pe.size();
    e.masked_crc32c = pe.crc32c();
    if (!e.sliced && (e.shard_id < 0 || e.shard_id >= b.num_shards_))
      return DataLossError(where, ": tensor '", key, "' is in shard ", e.shard_id, " but the bundle has ",
                           b.num_shards_);
    if (e.offset < 0 || e.size < 0)
      return DataLossError(where, ": tensor '", key, "' has offset ", e.offset, " and size ", e.size);
    b.entries_.emplace(key, std::move(e));
  }
  return b;
}

const BundleEntry* TensorBundle::Find(std::string_view key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

std::string TensorBundle::ShardPath(int shard) const { return prefix_ + ShardName(shard, num_shards_); }

StatusOr<std::string> TensorBundle::ReadBytes(const BundleEntry& e, bool check_crc) const {
  if (e.sliced)
    return UnimplementedError(prefix_, ".index: tensor '", e.key, "' is stored as slices of a partitioned variable, "
                              "which strata does not read");
  const std::string path = ShardPath(e.shard_id);
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFoundError("tensor '", e.key, "' is in ", path, ", which cannot be opened (missing shard?)");
  f.seekg(0, std::ios::end);
  const int64_t file_size = static_cast<int64_t>(f.tellg());
  if (e.offset > file_size || e.size > file_size - e.offset)
    return DataLossError("tensor '", e.key, "' occupies bytes [", e.offset, ", ", e.offset + e.size, ") of ", path,
                         ", which has only ", file_size, " bytes: the shard is truncated");
  std::string bytes(static_cast<size_t>(e.size), '\0');
  f.seekg(e.offset);
  f.read(bytes.data(), e.size);
  if (!f) return DataLossError("reading tensor '", e.key, "' from ", path, " failed");
  if (!check_crc) return bytes;
  const uint32_t actual = io::Crc32c(bytes);
  const uint32_t stored = io::UnmaskCrc(e.masked_crc32c);
  if (actual != stored)
    return DataLossError("tensor '", e.key, "' in ", path, " has CRC-32C ", actual, " but the index records ", stored,
                         ": the data shard (or the index) is corrupt");
  return bytes;
}

StatusOr<Tensor> TensorBundle::Read(std::string_view key) const {
  const BundleEntry* e = Find(key);
  if (!e) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : entries_) keys.push_back(k);
    if (keys.size() > 12) keys.resize(12);
    return NotFoundError(prefix_, ".index has no tensor '", key, "' (it has ", entries_.size(), ": ",
                         StrJoin(keys, ", "), entries_.size() > 12 ? ", ..." : "", ")");
  }
  if (e->dtype == DType::kUndefined)
    return UnimplementedError("tensor '", e->key, "' in ", prefix_, ".index has TF dtype ", e->tf_dtype,
                              "; strata reads ", DTypeList());
  if (e->dtype == DType::kString) {
    STRATA_ASSIGN_OR_RETURN(std::vector<std::string> strs, ReadStrings(key));
    STRATA_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(DType::kString, e->shape));
    for (size_t i = 0; i < strs.size(); ++i) t.data<std::string>()[i] = std::move(strs[i]);
    return t;
  }
  const int64_t n = e->shape.NumElements();
  const int64_t want = n * static_cast<int64_t>(DTypeSize(e->dtype));
  if (n < 0 || e->size != want)
    return DataLossError("tensor '", e->key, "' in ", prefix_, ".index is ", DTypeName(e->dtype),
                         e->shape.ToString(), " (", want, " bytes) but its entry says ", e->size, " bytes");
  STRATA_ASSIGN_OR_RETURN(std::string bytes, ReadBytes(*e));
  STRATA_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(e->dtype, e->shape));
  if (want > 0) std::memcpy(t.raw_data(), bytes.data(), static_cast<size_t>(want));
  return t;
}

StatusOr<std::vector<std::string>> TensorBundle::ReadStrings(std::string_view key) const {
  const BundleEntry* e = Find(key);
  if (!e) return NotFoundError(prefix_, ".index has no tensor '", key, "'");
  if (e->dtype != DType::kString)
    return InvalidArgumentError("tensor '", key, "' in ", prefix_, ".index is not a string tensor");
  const int64_t n = e->shape.NumElements();
  if (n < 0 || n > e->size)
    return DataLossError("string tensor '", key, "' has ", n, " elements but only ", e->size, " bytes");
  STRATA_ASSIGN_OR_RETURN(std::string bytes, ReadBytes(*e, /*check_crc=*/false));
  // Layout: n varint64 lengths, a 4-byte masked CRC of them, then the string bytes. TF's CRC covers each length as
  // a fixed-width little-endian integer (4 bytes, or 8 above 2^32-1; not its varint), then the 4 checksum bytes, then the string bytes.
  const char* p = bytes.data();
  const char* end = bytes.data() + bytes.size();
  std::vector<uint64_t> lens(static_cast<size_t>(n));
  uint32_t crc = 0;
  for (auto& len : lens) {
    if (!GetVarint(&p, end, 64, &len))
      return DataLossError("string tensor '", key, "': its length prefix is truncated");
    if (len <= UINT32_MAX) {
      const auto len32 = static_cast<uint32_t>(len);
      crc = io::Crc32cExtend(crc, &len32, sizeof(len32));
    } else {
      crc = io::Crc32cExtend(crc, &len, sizeof(len));
    }
  }
  if (end - p < 4) return DataLossError("string tensor '", key, "': its length checksum is missing");
  crc = io::Crc32cExtend(crc, p, 4);
  p += 4;
  std::vector<std::string> out;
  for (uint64_t len : lens) {
    if (len > static_cast<uint64_t>(end - p))
      return DataLossError("string tensor '", key, "': an element of ", len, " bytes runs past its ", e->size,
                           " bytes");
    out.emplace_back(p, len);
    crc = io::Crc32cExtend(crc, p, len);
    p += len;
  }
  if (crc != io::UnmaskCrc(e->masked_crc32c))
    return DataLossError("string tensor '", key, "' in ", ShardPath(e->shard_id), " has CRC-32C ", crc,
                         " but the index records ", io::UnmaskCrc(e->masked_crc32c), ": the data shard is corrupt");
  return out;
}

namespace {

constexpr char kObjectGraphKey[] = "_CHECKPOINTABLE_OBJECT_GRAPH";
constexpr char kVariableSuffix[] = "/.ATTRIBUTES/VARIABLE_VALUE";

void PutFixed32(std::string* out, uint32_t v) { out->append(reinterpret_cast<const char*>(&v), 4); }
void PutFixed64(std::string* out, uint64_t v) { out->append(reinterpret_cast<const char*>(&v), 8); }
void PutVarint64(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

int TfDTypeNumber(DType t) {
  switch (t) {
    case DType::kFloat32: return 1;
    case DType::kFloat64: return 2;
    case DType::kInt32: return 3;
    case DType::kUInt8: return 4;
    case DType::kInt16: return 5;
    case DType::kInt8: return 6;
    case DType::kString: return 7;
    case DType::kInt64: return 9;
    case DType::kBool: return 10;
    case DType::kBFloat16: return 14;
    case DType::kUInt16: return 17;
    case DType::kFloat16: return 19;
    case DType::kUInt32: return 22;
    case DType::kUInt64: return 23;
    default: return 0;
  }
}

// A LevelDB-format table of sorted key/value pairs: uncompressed data blocks (every entry a restart point), an
// index block, an empty metaindex block and the footer.
class TableWriter {
 public:
  void Add(const std::string& key, const std::string& value) {
    restarts_.push_back(static_cast<uint32_t>(block_.size()));
    PutVarint64(&block_, 0);
    PutVarint64(&block_, key.size());
    PutVarint64(&block_, value.size());
    block_ += key;
    block_ += value;
    last_key_ = key;
    if (block_.size() >= 4096) Flush();
  }
  std::string Finish() {
    Flush();
    std::string meta_handle = WriteBlock(std::string(), {0});
    std::string index;
    std::vector<uint32_t> idx_restarts;
    for (const auto& [k, h] : index_entries_) {
      idx_restarts.push_back(static_cast<uint32_t>(index.size()));
      PutVarint64(&index, 0);
      PutVarint64(&index, k.size());
      PutVarint64(&index, h.size());
      index += k;
      index += h;
    }
    if (idx_restarts.empty()) idx_restarts.push_back(0);
    std::string index_handle = WriteBlock(index, idx_restarts);
    std::string footer = meta_handle + index_handle;
    footer.resize(40, '\0');
    PutFixed64(&footer, kTableMagic);
    file_ += footer;
    return std::move(file_);
  }

 private:
  void Flush() {
    if (restarts_.empty()) return;
    index_entries_.emplace_back(last_key_, WriteBlock(block_, restarts_));
    block_.clear();
    restarts_.clear();
  }
  // Appends block + restarts + trailer to the file; returns the encoded handle.
  std::string WriteBlock(std::string contents, const std::vector<uint32_t>& restarts) {
    for (uint32_t r : restarts) PutFixed32(&contents, r);
    PutFixed32(&contents, static_cast<uint32_t>(restarts.size()));
    std::string handle;
    PutVarint64(&handle, file_.size());
    PutVarint64(&handle, contents.size());
    file_ += contents;
    const char type = 0;
    const uint32_t crc = io::Crc32cExtend(io::Crc32c(contents), &type, 1);
    file_.push_back(type);
    PutFixed32(&file_, io::MaskCrc(crc));
    return handle;
  }

  std::string file_, block_, last_key_;
  std::vector<uint32_t> restarts_;
  std::vector<std::pair<std::string, std::string>> index_entries_;
};

}  // namespace

Status WriteTensorBundle(const std::string& prefix, const std::map<std::string, Tensor>& tensors) {
  std::string data;
  TableWriter table;
  tensorflow::BundleHeaderProto header;
  header.set_num_shards(1);
  header.set_endianness(tensorflow::BundleHeaderProto::LITTLE);
  header.mutable_version()->set_producer(1);
  table.Add("", header.SerializeAsString());
  for (const auto& [key, t] : tensors) {
    if (key.empty()) return InvalidArgumentError("a TensorBundle tensor needs a non-empty key");
    const int tf_dtype = TfDTypeNumber(t.dtype());
    if (tf_dtype == 0)
      return UnimplementedError("tensor '", key, "' is ", DTypeName(t.dtype()), ", which TensorBundles do not hold");
    tensorflow::BundleEntryProto e;
    e.set_dtype(static_cast<tensorflow::DataType>(tf_dtype));
    for (int i = 0; i < t.rank(); ++i) e.mutable_shape()->add_dim()->set_size(t.dim(i));
    e.set_offset(static_cast<int64_t>(data.size()));
    uint32_t crc = 0;
    if (t.dtype() == DType::kString) {
      // n varint lengths, the masked CRC of the lengths (as fixed 32-bit integers), then the bytes.
      std::string bytes;
      for (const std::string& v : t.values<std::string>()) {
        PutVarint64(&bytes, v.size());
        const auto len32 = static_cast<uint32_t>(v.size());
        crc = io::Crc32cExtend(crc, &len32, 4);
      }
      const uint32_t length_checksum = io::MaskCrc(crc);
      PutFixed32(&bytes, length_checksum);
      crc = io::Crc32cExtend(crc, &length_checksum, 4);
      for (const std::string& v : t.values<std::string>()) {
        bytes += v;
        crc = io::Crc32cExtend(crc, v.data(), v.size());
      }
      data += bytes;
      e.set_size(static_cast<int64_t>(bytes.size()));
    } else {
      const char* p = static_cast<const char*>(t.raw_data());
      crc = io::Crc32c(p, t.byte_size());
      data.append(p, t.byte_size());
      e.set_size(static_cast<int64_t>(t.byte_size()));
    }
    e.set_crc32c(io::MaskCrc(crc));
    table.Add(key, e.SerializeAsString());
  }
  const std::string dir = Dirname(prefix);
  if (!dir.empty()) STRATA_RETURN_IF_ERROR(MakeDirs(dir));
  STRATA_RETURN_IF_ERROR(WriteFileAtomic(prefix + ShardName(0, 1), data));
  return WriteFileAtomic(prefix + ".index", table.Finish());
}

namespace {

// The "_CHECKPOINTABLE_OBJECT_GRAPH" of an object-based checkpoint, with every child reference checked.
StatusOr<tensorflow::TrackableObjectGraph> ReadObjectGraph(const TensorBundle& b, const std::string& prefix) {
  if (!b.Find(kObjectGraphKey))
    return NotFoundError(prefix, ".index has no ", kObjectGraphKey,
                         ": not an object-based (tf.train.Checkpoint) checkpoint");
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> og, b.ReadStrings(kObjectGraphKey));
  tensorflow::TrackableObjectGraph graph;
  if (og.size() != 1 || !graph.ParseFromString(og[0]))
    return DataLossError(prefix, ".index: ", kObjectGraphKey, " is not a TrackableObjectGraph");
  for (const auto& node : graph.nodes())
    for (const auto& c : node.children())
      if (c.node_id() < 0 || c.node_id() >= graph.nodes_size())
        return DataLossError(prefix, ".index: the object graph refers to node ", c.node_id(), " of ",
                             graph.nodes_size());
  return graph;
}

// The node that `node`'s child `name` refers to; -1 when it has none.
int ChildNamed(const tensorflow::TrackableObjectGraph& graph, int node, std::string_view name) {
  for (const auto& c : graph.nodes(node).children())
    if (c.local_name() == name) return c.node_id();
  return -1;
}

const tensorflow::TrackableObjectGraph::TrackableObject::SerializedTensor* VariableValue(
    const tensorflow::TrackableObjectGraph& graph, int node) {
  for (const auto& a : graph.nodes(node).attributes())
    if (a.name() == "VARIABLE_VALUE") return &a;
  return nullptr;
}

// The layer list of a Keras model object: Functional models track it as `_operations`, a Sequential model through
// its inner `_functional` (Keras 3); `_layers`/`layers` are the names of older Keras versions. -1 if none.
int LayerList(const tensorflow::TrackableObjectGraph& graph, int model) {
  for (int depth = 0; depth < 4 && model >= 0; ++depth) {
    for (const char* name : {"_operations", "_layers", "layers"}) {
      const int list = ChildNamed(graph, model, name);
      if (list >= 0) return list;
    }
    model = ChildNamed(graph, model, "_functional");
  }
  return -1;
}

// Appends the layers of the layer list `list` (children "0", "1", ... in numeric order) that own variables; a layer
// that is itself a model (a nested Functional/Sequential) contributes its layers in place.
Status CollectKerasLayers(const TensorBundle& b, const tensorflow::TrackableObjectGraph& graph, int list,
                          const std::string& path, int depth, std::vector<bool>* seen,
                          std::vector<KerasCheckpointLayer>* out) {
  if (depth > 16) return DataLossError(b.prefix(), ".index: Keras models nested more than 16 deep at '", path, "'");
  // A hostile (or damaged) object graph may loop back into a layer list: each list is walked once.
  if ((*seen)[list])
    return DataLossError(b.prefix(), ".index: the object graph's layer lists form a cycle at '", path, "'");
  (*seen)[list] = true;
  std::vector<std::pair<int64_t, const tensorflow::TrackableObjectGraph::TrackableObject::ObjectReference*>> items;
  for (const auto& c : graph.nodes(list).children()) {
    const std::string& n = c.local_name();
    if (n.empty() || n.size() > 9 || n.find_first_not_of("0123456789") != std::string::npos) continue;
    items.emplace_back(std::stoll(n), &c);
  }
  std::sort(items.begin(), items.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (const auto& [index, ref] : items) {
    const int layer = ref->node_id();
    const std::string layer_path = StrCat(path, "/", ref->local_name());
    const int nested = LayerList(graph, layer);
    if (nested >= 0) {
      STRATA_RETURN_IF_ERROR(CollectKerasLayers(b, graph, nested, layer_path + "/_operations", depth + 1, seen, out));
      continue;
    }
    KerasCheckpointLayer l;
    l.path = layer_path;
    for (const auto& c : graph.nodes(layer).children()) {
      const auto* value = VariableValue(graph, c.node_id());
      if (value == nullptr) continue;
      KerasCheckpointVariable v;
      v.attribute = c.local_name();
      v.full_name = value->full_name();
      v.checkpoint_key = value->checkpoint_key();
      STRATA_ASSIGN_OR_RETURN(v.value, b.Read(value->checkpoint_key()));
      l.variables.push_back(std::move(v));
    }
    if (!l.variables.empty()) out->push_back(std::move(l));
  }
  return Status::OK();
}

}  // namespace

StatusOr<std::vector<KerasCheckpointLayer>> ReadKerasCheckpointLayers(const std::string& prefix,
                                                                      const std::string& model_path) {
  STRATA_ASSIGN_OR_RETURN(TensorBundle b, TensorBundle::Open(prefix));
  STRATA_ASSIGN_OR_RETURN(tensorflow::TrackableObjectGraph graph, ReadObjectGraph(b, prefix));
  if (graph.nodes_size() == 0) return DataLossError(prefix, ".index: the object graph has no nodes");
  int node = 0;
  std::vector<std::string> root_children;
  for (const auto& c : graph.nodes(0).children()) root_children.push_back(c.local_name());
  for (size_t pos = 0; pos <= model_path.size();) {
    const size_t slash = std::min(model_path.find('/', pos), model_path.size());
    const std::string part = model_path.substr(pos, slash - pos);
    pos = slash + 1;
    if (part.empty()) continue;
    node = ChildNamed(graph, node, part);
    if (node < 0)
      return NotFoundError("TF checkpoint ", prefix, ": no object '", model_path,
                           "' (the tf.train.Checkpoint's objects: ", StrJoin(root_children, ", "),
                           "); write it as tf.train.Checkpoint(", model_path, "=keras_model, ...)");
  }
  const int list = LayerList(graph, node);
  if (list < 0)
    return InvalidArgumentError("TF checkpoint ", prefix, ": object '", model_path,
                                "' is not a Keras model (it tracks no _operations or _layers list)");
  std::vector<KerasCheckpointLayer> out;
  std::vector<bool> seen(static_cast<size_t>(graph.nodes_size()), false);
  STRATA_RETURN_IF_ERROR(CollectKerasLayers(b, graph, list, model_path + "/_operations", 0, &seen, &out));
  if (out.empty())
    return InvalidArgumentError("TF checkpoint ", prefix, ": the Keras model '", model_path,
                                "' has no layer with variables (was it built before the checkpoint was written?)");
  return out;
}

StatusOr<std::map<std::string, Tensor>> ReadObjectCheckpoint(const std::string& prefix) {
  STRATA_ASSIGN_OR_RETURN(TensorBundle b, TensorBundle::Open(prefix));
  STRATA_ASSIGN_OR_RETURN(tensorflow::TrackableObjectGraph graph, ReadObjectGraph(b, prefix));
  std::map<std::string, Tensor> out;
  // Breadth-first from the root: the first path that reaches a node names it.
  std::vector<std::string> path_of(static_cast<size_t>(graph.nodes_size()));
  std::vector<bool> seen(path_of.size(), false);
  std::vector<int> queue = {0};
  if (!seen.empty()) seen[0] = true;
  for (size_t qi = 0; qi < queue.size() && !path_of.empty(); ++qi) {
    const int id = queue[qi];
    const auto& node = graph.nodes(id);
    for (const auto& a : node.attributes()) {
      if (a.name() != "VARIABLE_VALUE") continue;
      STRATA_ASSIGN_OR_RETURN(Tensor t, b.Read(a.checkpoint_key()));
      out[path_of[id]] = std::move(t);
    }
    for (const auto& c : node.children()) {
      if (c.node_id() < 0 || c.node_id() >= graph.nodes_size())
        return DataLossError(prefix, ".index: the object graph refers to node ", c.node_id(), " of ",
                             graph.nodes_size());
      if (seen[c.node_id()]) continue;
      seen[c.node_id()] = true;
      path_of[c.node_id()] = path_of[id].empty() ? c.local_name() : path_of[id] + "/" + c.local_name();
      queue.push_back(c.node_id());
    }
  }
  return out;
}

Status WriteObjectCheckpoint(const std::string& prefix, const std::map<std::string, Tensor>& by_path) {
  tensorflow::TrackableObjectGraph graph;
  graph.add_nodes();  // the root
  std::map<std::string, int> node_of = {{"", 0}};
  std::map<std::string, Tensor> tensors;
  for (const auto& [path, t] : by_path) {
    if (path.empty() || path.front() == '/' || path.back() == '/' || path.find("//") != std::string::npos)
      return InvalidArgumentError("object path '", path, "' must be non-empty components separated by '/'");
    // Create the chain of objects.
    size_t pos = 0;
    std::string parent;
    while (true) {
      const size_t slash = path.find('/', pos);
      const std::string here = path.substr(0, slash);
      if (!node_of.count(here)) {
        const int id = graph.nodes_size();
        graph.add_nodes();
        auto* ref = graph.mutable_nodes(node_of[parent])->add_children();
        ref->set_node_id(id);
        ref->set_local_name(here.substr(pos));
        node_of[here] = id;
      }
      parent = here;
      if (slash == std::string::npos) break;
      pos = slash + 1;
    }
    const std::string key = path + kVariableSuffix;
    auto* attr = graph.mutable_nodes(node_of[path])->add_attributes();
    attr->set_name("VARIABLE_VALUE");
    attr->set_full_name(path);
    attr->set_checkpoint_key(key);
    tensors[key] = t;
  }
  Tensor og = Tensor::Empty(DType::kString, Shape{});
  og.data<std::string>()[0] = graph.SerializeAsString();
  tensors[kObjectGraphKey] = og;
  return WriteTensorBundle(prefix, tensors);
}

}  // namespace strata::tf
