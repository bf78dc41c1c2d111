// Element helpers, the Dataset handle, QualityStats and the shared iterator helpers.
#include <algorithm>
#include <random>
#include <thread>

#include "data/dataset_impl.h"

namespace strata::data {

// ---- Element ----

const Tensor* Element::Find(std::string_view name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

StatusOr<Tensor> Element::Get(std::string_view name) const {
  if (const Tensor* t = Find(name)) return *t;
  std::vector<std::string> names;
  for (const auto& [n, t] : tensors) names.push_back("'" + n + "'");
  return NotFoundError("element has no tensor '", name, "' (it has ", names.empty() ? "none" : StrJoin(names, ", "),
                       ")");
}

void Element::Set(std::string_view name, Tensor t) {
  for (auto& [n, old] : tensors) {
    if (n == name) {
      old = std::move(t);
      return;
    }
  }
  tensors.emplace_back(std::string(name), std::move(t));
}

bool Element::Erase(std::string_view name) {
  for (auto it = tensors.begin(); it != tensors.end(); ++it) {
    if (it->first == name) {
      tensors.erase(it);
      return true;
    }
  }
  return false;
}

Metadata& Element::meta() {
  if (metadata.empty()) metadata.emplace_back();
  return metadata.front();
}

std::string Element::Describe() const {
  if (metadata.empty()) return "element";
  const Metadata& m = metadata.front();
  auto get = [&](const char* key) -> std::string {
    auto it = m.find(key);
    return it == m.end() ? std::string() : it->second;
  };
  std::string out;
  const std::string record = get(kMetaRecord), offset = get(kMetaOffset), source = get(kMetaSource);
  if (!record.empty()) out = "record " + record;
  if (!offset.empty()) out += (out.empty() ? "offset " : " (offset ") + offset + (out.empty() ? "" : ")");
  if (!source.empty()) out += (out.empty() ? "" : " of ") + ("'" + source + "'");
  if (out.empty()) out = "element";
  if (metadata.size() > 1) out = StrCat("batch of ", metadata.size(), " starting with ", out);
  return out;
}

size_t Element::ByteSize() const {
  size_t n = 0;
  for (const auto& [name, t] : tensors) {
    if (t.dtype() == DType::kString) {
      for (const std::string& s : t.values<std::string>()) n += s.size();
    } else {
      n += t.byte_size();
    }
  }
  return n;
}

StatusOr<int64_t> Iterator::Skip(int64_t n) { return internal::SkipByGetNext(this, n); }

// ---- QualityStats ----

void QualityStats::AddExamined(int64_t epoch, int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  epochs_[epoch].examined += n;
}

void QualityStats::AddDropped(int64_t epoch, std::string_view reason, int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  epochs_[epoch].dropped[std::string(reason)] += n;
}

std::map<int64_t, QualityStats::Epoch> QualityStats::ByEpoch() const {
  std::lock_guard<std::mutex> lock(mu_);
  return epochs_;
}

QualityStats::Epoch QualityStats::ForEpoch(int64_t epoch) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = epochs_.find(epoch);
  return it == epochs_.end() ? Epoch() : it->second;
}

int64_t QualityStats::TotalDropped(std::string_view reason) const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t n = 0;
  for (const auto& [e, stats] : epochs_)
    for (const auto& [r, count] : stats.dropped)
      if (reason.empty() || r == reason) n += count;
  return n;
}

std::string QualityStats::Report() const {
  std::string out;
  for (const auto& [epoch, stats] : ByEpoch()) {
    int64_t dropped = 0;
    std::vector<std::string> parts;
    for (const auto& [reason, count] : stats.dropped) {
      dropped += count;
      parts.push_back(StrCat(reason, " ", count));
    }
    out += StrCat("epoch ", epoch, ": examined ", stats.examined, ", dropped ", dropped);
    if (!parts.empty()) out += StrCat(" (", StrJoin(parts, ", "), ")");
    out += "\n";
  }
  return out;
}

// ---- Dataset ----

Dataset::Dataset() : Dataset(internal::ErrorDataset(FailedPreconditionError("uninitialised Dataset")).node()) {}

Dataset::Dataset(std::shared_ptr<const internal::DatasetNode> node) : node_(std::move(node)) {}

namespace {

// Keeps the root node (and through it the whole pipeline) alive while its iterator runs, so that a Dataset may be
// a temporary: `auto it = Dataset::Range(0, 9).Batch(3).MakeIterator();`.
class RootIterator final : public Iterator {
 public:
  RootIterator(std::shared_ptr<const internal::DatasetNode> node, std::unique_ptr<Iterator> it)
      : node_(std::move(node)), it_(std::move(it)) {}
  StatusOr<bool> GetNext(Element* out) override { return it_->GetNext(out); }
  StatusOr<int64_t> Skip(int64_t n) override { return it_->Skip(n); }

 private:
  std::shared_ptr<const internal::DatasetNode> node_;  // declared first: destroyed after it_
  std::unique_ptr<Iterator> it_;
};

}  // namespace

StatusOr<std::unique_ptr<Iterator>> Dataset::MakeIterator(IteratorOptions options) const {
  STRATA_ASSIGN_OR_RETURN(auto it, node_->MakeIterator(options));
  return std::unique_ptr<Iterator>(new RootIterator(node_, std::move(it)));
}

std::string Dataset::DebugString() const {
  std::string out;
  const auto& inputs = node_->inputs();
  if (inputs.size() == 1) {
    out = inputs[0].DebugString() + " -> ";
  } else if (!inputs.empty()) {
    std::vector<std::string> parts;
    for (const Dataset& d : inputs) parts.push_back(d.DebugString());
    out = "[" + StrJoin(parts, " | ") + "] -> ";
  }
  return out + node_->description();
}

namespace internal {
namespace {

class ErrorNode final : public DatasetNode {
 public:
  explicit ErrorNode(Status status) : DatasetNode("error(" + status.message() + ")", {}), status_(std::move(status)) {}
  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions&) const override { return status_; }

 private:
  Status status_;
};

}  // namespace

Dataset ErrorDataset(Status status) { return MakeDataset<ErrorNode>(std::move(status)); }

int64_t ResolveParallelism(int64_t n) {
  if (n == kAutotune) return std::max<int64_t>(1, std::thread::hardware_concurrency());
  return n;
}

uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t MixSeeds(uint64_t a, uint64_t b, uint64_t c) { return Mix64(Mix64(Mix64(a) ^ b) ^ c); }

uint64_t RandomSeed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

Status WithElementContext(Status status, std::string_view transformation, const Element& element) {
  if (status.ok()) return status;
  return std::move(status).WithContext(StrCat(transformation, " on ", element.Describe()));
}

Tensor SliceRow(const Tensor& t, int64_t i) {
  Shape row;
  for (int d = 1; d < t.rank(); ++d) row.PushBack(t.dim(d));
  const size_t row_bytes = static_cast<size_t>(row.NumElements()) * DTypeSize(t.dtype());
  auto* base = static_cast<char*>(const_cast<void*>(t.raw_data()));
  return Tensor::Wrap(t.dtype(), row, base + static_cast<size_t>(i) * row_bytes, t.buffer());
}

Tensor StringScalar(std::string s) {
  Tensor t = Tensor::Empty(DType::kString, Shape{});
  t.data<std::string>()[0] = std::move(s);
  return t;
}

Tensor Int64Scalar(int64_t v) { return Tensor::Scalar<int64_t>(v); }

StatusOr<int64_t> SkipByGetNext(Iterator* it, int64_t n) {
  Element scratch;
  int64_t done = 0;
  while (done < n) {
    STRATA_ASSIGN_OR_RETURN(bool more, it->GetNext(&scratch));
    if (!more) break;
    ++done;
  }
  return done;
}

}  // namespace internal
}  // namespace strata::data
