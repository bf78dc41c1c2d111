// TfIdfVectorizer (opset 9): counts, per row of X ([C] or [N, C]; int32, int64 or string), the n-grams of the pool
// (pool_int64s or pool_strings; ngram_counts[i] is where the (i+1)-grams start in it) whose length is in
// [min_gram_length, max_gram_length], where consecutive items of an n-gram may be up to max_skip_count positions
// apart (each skip distance counted separately; unigrams once). Pool n-gram g adds to output ngram_indexes[g]:
//   TF: its count;  IDF: weights[g] if it occurs;  TFIDF: count * weights[g]   (weights default to 1).
// Output: float32 [max(ngram_indexes) + 1] or [N, max(ngram_indexes) + 1].
#include <algorithm>
#include <unordered_map>

#include "ops/op_util.h"

namespace strata::ops {
namespace {

enum class TfIdfMode { kTF, kIDF, kTFIDF };

struct TfIdfAttrs {
  TfIdfMode mode = TfIdfMode::kTF;
  int64_t min_gram = 1, max_gram = 1, max_skip = 0, out_size = 0;
  std::vector<int64_t> counts, indexes;
  std::vector<float> weights;
  bool strings = false;
};

StatusOr<TfIdfAttrs> ReadTfIdfAttrs(const Node& node) {
  TfIdfAttrs a;
  const std::string mode = node.GetString("mode", "");
  if (mode == "TF") a.mode = TfIdfMode::kTF;
  else if (mode == "IDF") a.mode = TfIdfMode::kIDF;
  else if (mode == "TFIDF") a.mode = TfIdfMode::kTFIDF;
  else return InvalidArgumentError(node.Describe(), ": mode must be TF, IDF or TFIDF, got '", mode, "'");
  STRATA_ASSIGN_OR_RETURN(a.min_gram, node.RequireInt("min_gram_length"));
  STRATA_ASSIGN_OR_RETURN(a.max_gram, node.RequireInt("max_gram_length"));
  STRATA_ASSIGN_OR_RETURN(a.max_skip, node.RequireInt("max_skip_count"));
  if (a.min_gram < 1 || a.max_gram < a.min_gram || a.max_skip < 0)
    return InvalidArgumentError(node.Describe(), ": expected 1 <= min_gram_length <= max_gram_length and ",
                                "max_skip_count >= 0, got ", a.min_gram, ", ", a.max_gram, ", ", a.max_skip);
  STRATA_ASSIGN_OR_RETURN(a.counts, node.RequireInts("ngram_counts"));
  STRATA_ASSIGN_OR_RETURN(a.indexes, node.RequireInts("ngram_indexes"));
  a.weights = node.GetFloats("weights");
  a.strings = node.HasAttr("pool_strings");
  if (a.strings == node.HasAttr("pool_int64s"))
    return InvalidArgumentError(node.Describe(), ": exactly one of pool_int64s and pool_strings must be given");
  for (int64_t i : a.indexes) {
    if (i < 0) return InvalidArgumentError(node.Describe(), ": ngram_indexes must be >= 0, got ", i);
    a.out_size = std::max(a.out_size, i + 1);
  }
  if (!a.weights.empty() && a.weights.size() != a.indexes.size())
    return InvalidArgumentError(node.Describe(), ": weights must have one value per n-gram (", a.indexes.size(),
                                "), got ", a.weights.size());
  return a;
}

// The pool as a trie over items; terminal nodes hold the pool n-gram number.
template <typename T>
class Pool {
 public:
  int Child(int node, const T& item) const {
    auto it = nodes_[node].next.find(item);
    return it == nodes_[node].next.end() ? -1 : it->second;
  }
  int64_t gram(int node) const { return nodes_[node].gram; }

  Status Build(const Node& node, const std::vector<T>& pool, const std::vector<int64_t>& counts, size_t grams) {
    size_t g = 0;
    for (size_t level = 0; level < counts.size(); ++level) {
      const int64_t n = static_cast<int64_t>(level) + 1;
      const int64_t begin = counts[level];
      const int64_t end = level + 1 < counts.size() ? counts[level + 1] : static_cast<int64_t>(pool.size());
      if (begin < 0 || end < begin || end > static_cast<int64_t>(pool.size()) || (end - begin) % n != 0)
        return InvalidArgumentError(node.Describe(), ": ngram_counts ", counts, " do not split the pool of ",
                                    pool.size(), " items into whole ", n, "-grams");
      for (int64_t s = begin; s < end; s += n, ++g) {
        int cur = 0;
        for (int64_t k = 0; k < n; ++k) {
          int next = Child(cur, pool[s + k]);
          if (next < 0) {
            next = static_cast<int>(nodes_.size());
            nodes_[cur].next.emplace(pool[s + k], next);
            nodes_.emplace_back();
          }
          cur = next;
        }
        nodes_[cur].gram = static_cast<int64_t>(g);
      }
    }
    if (g != grams)
      return InvalidArgumentError(node.Describe(), ": the pool holds ", g, " n-grams but ngram_indexes has ", grams);
    return Status::OK();
  }

 private:
  struct TrieNode {
    std::unordered_map<T, int> next;
    int64_t gram = -1;
  };
  std::vector<TrieNode> nodes_{1};
};

template <typename T, typename X>
void CountRow(const TfIdfAttrs& a, const Pool<T>& pool, const X* row, int64_t c, std::vector<int64_t>* counts) {
  // A skip of c or more leaves no room for a second item: larger ones add nothing.
  for (int64_t skip = 0; skip <= std::min(a.max_skip, c); ++skip) {
    const int64_t first_n = skip == 0 ? a.min_gram : std::max<int64_t>(a.min_gram, 2);  // unigrams once
    if (first_n > a.max_gram) break;
    for (int64_t s = 0; s < c; ++s) {
      int node = 0;
      for (int64_t n = 1; n <= a.max_gram; ++n) {
        const int64_t pos = s + (n - 1) * (skip + 1);
        if (pos >= c) break;
        node = pool.Child(node, static_cast<T>(row[pos]));
        if (node < 0) break;
        if (n >= first_n && pool.gram(node) >= 0) ++(*counts)[pool.gram(node)];
      }
    }
  }
}

Status TfIdfInfer(InferContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(TfIdfAttrs a, ReadTfIdfAttrs(ctx.node()));
  const DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && t != DType::kInt32 && t != DType::kInt64 && t != DType::kString)
    return ctx.Error("X must be int32, int64 or string, got ", DTypeName(t));
  const PartialShape& x = ctx.input_shape(0);
  if (x.rank_known && x.rank() != 1 && x.rank() != 2) return ctx.Error("X must be 1-D or 2-D, got ", x.ToString());
  PartialShape out = !x.rank_known ? PartialShape::Unknown()
                     : x.rank() == 1 ? PartialShape::Of({Dim(a.out_size)})
                                     : PartialShape::Of({x.dims[0], Dim(a.out_size)});
  ctx.SetOutput(0, DType::kFloat32, std::move(out));
  return Status::OK();
}

template <typename T, typename X>
Status RunTfIdf(KernelContext& ctx, const TfIdfAttrs& a, const std::vector<T>& pool_items, const X* x, int64_t rows,
                int64_t c, float* y) {
  Pool<T> pool;
  STRATA_RETURN_IF_ERROR(pool.Build(ctx.node(), pool_items, a.counts, a.indexes.size()));
  std::vector<int64_t> counts(a.indexes.size());
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(counts.begin(), counts.end(), 0);
    CountRow(a, pool, x + r * c, c, &counts);
    float* out = y + r * a.out_size;
    std::fill(out, out + a.out_size, 0.0f);
    for (size_t g = 0; g < counts.size(); ++g) {
      const float w = a.weights.empty() ? 1.0f : a.weights[g];
      const float cnt = static_cast<float>(counts[g]);
      out[a.indexes[g]] += a.mode == TfIdfMode::kTF ? cnt : a.mode == TfIdfMode::kIDF ? (counts[g] > 0 ? w : 0.0f)
                                                                                       : cnt * w;
    }
  }
  return Status::OK();
}

Status TfIdfCompute(KernelContext& ctx) {
  const Node& node = ctx.node();
  STRATA_ASSIGN_OR_RETURN(TfIdfAttrs a, ReadTfIdfAttrs(node));
  const Tensor& x = ctx.input(0);
  if (x.rank() != 1 && x.rank() != 2) return ctx.Error("X must be 1-D or 2-D, got ", x.shape().ToString());
  const int64_t rows = x.rank() == 1 ? 1 : x.dim(0), c = x.dim(x.rank() - 1);
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DType::kFloat32, x.rank() == 1 ? Shape{a.out_size}
                                                                                    : Shape{rows, a.out_size}));
  float* py = y->data<float>();
  if (a.strings) {
    if (x.dtype() != DType::kString) return ctx.Error("a pool_strings vectorizer needs string input, got ", x.TypeString());
    return RunTfIdf<std::string>(ctx, a, node.GetStrings("pool_strings"), x.data<std::string>(), rows, c, py);
  }
  const std::vector<int64_t> pool = node.GetInts("pool_int64s");
  if (x.dtype() == DType::kInt64) return RunTfIdf<int64_t>(ctx, a, pool, x.data<int64_t>(), rows, c, py);
  if (x.dtype() == DType::kInt32) return RunTfIdf<int64_t>(ctx, a, pool, x.data<int32_t>(), rows, c, py);
  return ctx.Error("a pool_int64s vectorizer needs int32 or int64 input, got ", x.TypeString());
}

}  // namespace

void RegisterTfIdfVectorizer(OpRegistry* r) {
  OpSchema s;
  s.name = "TfIdfVectorizer";
  s.since_version = 9;
  s.min_inputs = 1;
  s.max_inputs = 1;
  s.infer = TfIdfInfer;
  s.reference = TfIdfCompute;
  s.no_grad_reason = "integer or string input";
  r->Add(std::move(s));
}

}  // namespace strata::ops
