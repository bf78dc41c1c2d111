#include "strata/tensor.h"

namespace strata {

void Shape::Assign(const int64_t* d, size_t n) {
  rank_ = static_cast<int>(n);
  if (n <= static_cast<size_t>(kInline)) {
    heap_.clear();
    for (size_t i = 0; i < n; ++i) inline_[i] = d[i];
  } else {
    heap_.assign(d, d + n);
  }
}

int64_t Shape::NumElements() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= data()[i];
  return n;
}

int64_t Shape::Product(int from, int to) const {
  int64_t n = 1;
  for (int i = from; i < to; ++i) n *= data()[i];
  return n;
}

void Shape::Resize(int rank) {
  std::vector<int64_t> v = ToVector();
  v.resize(static_cast<size_t>(rank), 0);
  Assign(v.data(), v.size());
}

void Shape::PushBack(int64_t d) {
  if (rank_ < kInline) {
    inline_[rank_++] = d;
    return;
  }
  std::vector<int64_t> v = ToVector();
  v.push_back(d);
  Assign(v.data(), v.size());
}

std::string Shape::ToString() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ',';
    s += std::to_string(data()[i]);
  }
  s += ']';
  return s;
}

bool Shape::operator==(const Shape& o) const {
  if (rank_ != o.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (data()[i] != o.data()[i]) return false;
  return true;
}

PartialShape PartialShape::Of(const Shape& s) {
  PartialShape p;
  p.rank_known = true;
  for (int64_t d : s) p.dims.emplace_back(d);
  return p;
}

bool PartialShape::IsFullyKnown() const {
  if (!rank_known) return false;
  for (const Dim& d : dims)
    if (!d.known()) return false;
  return true;
}

Shape PartialShape::ToShape() const {
  Shape s;
  for (const Dim& d : dims) s.PushBack(d.value);
  return s;
}

bool PartialShape::Accepts(const Shape& s) const {
  if (!rank_known) return true;
  if (static_cast<int>(dims.size()) != s.rank()) return false;
  for (int i = 0; i < s.rank(); ++i)
    if (dims[i].known() && dims[i].value != s[i]) return false;
  return true;
}

std::string PartialShape::ToString() const {
  if (!rank_known) return "unknown rank";
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ',';
    if (dims[i].known())
      s += std::to_string(dims[i].value);
    else if (!dims[i].symbol.empty())
      s += dims[i].symbol;
    else
      s += '?';
  }
  s += ']';
  return s;
}

}  // namespace strata
