// StringNormalizer (opset 10): removes stopwords from a string tensor [C] or [1, C] (compared exactly, or ignoring
// case when is_case_sensitive = 0) and then changes case (case_change_action NONE, LOWER or UPPER). When every
// string is removed the output is one empty string ([1] or [1, 1]). Case mapping is Unicode's simple mapping of UTF-8
// text (glibc's C.UTF-8 tables), which is what the default and "en_US" locales do; other locales are Unimplemented.
#include <locale.h>
#include <wctype.h>

#include <algorithm>
#include <unordered_set>

#include "core/utf8.h"
#include "ops/op_util.h"

namespace strata::ops {
namespace {

enum class CaseChange { kNone, kLower, kUpper };

struct NormalizerAttrs {
  CaseChange change = CaseChange::kNone;
  bool case_sensitive = false;
  std::vector<std::string> stopwords;
};

StatusOr<NormalizerAttrs> ReadNormalizerAttrs(const Node& node) {
  NormalizerAttrs a;
  const std::string action = node.GetString("case_change_action", "NONE");
  if (action == "LOWER") a.change = CaseChange::kLower;
  else if (action == "UPPER") a.change = CaseChange::kUpper;
  else if (action != "NONE")
    return InvalidArgumentError(node.Describe(), ": case_change_action must be NONE, LOWER or UPPER, got '", action, "'");
  a.case_sensitive = node.GetInt("is_case_sensitive", 0) != 0;
  const std::string locale = node.GetString("locale", "");
  if (!locale.empty() && locale != "en_US" && locale != "en_US.UTF-8" && locale != "en_US.utf8" && locale != "C")
    return UnimplementedError(node.Describe(), ": locale '", locale, "' is not supported (only the default, en_US)");
  a.stopwords = node.GetStrings("stopwords");
  return a;
}

// Decodes UTF-8 into code points; false on malformed input.
bool DecodeUtf8(const std::string& s, std::u32string* out) {
  out->clear();
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    char32_t cp = len == 1 ? c : c & (0x7f >> len);
    for (int k = 1; k < len; ++k) {
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 2) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    out->push_back(cp);
    i += len;
  }
  return true;
}

void EncodeUtf8(const std::u32string& in, std::string* out) {
  out->clear();
  for (char32_t cp : in) AppendUtf8(out, static_cast<uint32_t>(cp));
}

// Maps the case of a UTF-8 string: ASCII directly, other text through the C.UTF-8 locale's tables.
Status ChangeCase(const Node& node, const std::string& s, bool upper, std::string* out) {
  if (std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; })) {
    *out = s;
    for (char& c : *out)
      if (upper ? (c >= 'a' && c <= 'z') : (c >= 'A' && c <= 'Z')) c = static_cast<char>(c ^ 0x20);
    return Status::OK();
  }
  static const locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
  if (utf8 == static_cast<locale_t>(nullptr))
    return UnimplementedError(node.Describe(), ": changing the case of non-ASCII text needs the C.UTF-8 locale");
  std::u32string cps;
  if (!DecodeUtf8(s, &cps)) return InvalidArgumentError(node.Describe(), ": input string is not valid UTF-8");
  for (char32_t& cp : cps)
    cp = static_cast<char32_t>(upper ? towupper_l(static_cast<wint_t>(cp), utf8) : towlower_l(static_cast<wint_t>(cp), utf8));
  EncodeUtf8(cps, out);
  return Status::OK();
}

Status StringNormalizerInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(ReadNormalizerAttrs(ctx.node()).status());
  if (ctx.input_dtype(0) != DType::kUndefined && ctx.input_dtype(0) != DType::kString)
    return ctx.Error("X must be a string tensor, got ", DTypeName(ctx.input_dtype(0)));
  const PartialShape& x = ctx.input_shape(0);
  if (x.rank_known && x.rank() != 1 && !(x.rank() == 2 && (!x.dims[0].known() || x.dims[0].value == 1)))
    return ctx.Error("X must have shape [C] or [1, C], got ", x.ToString());
  PartialShape out = x;
  if (x.rank_known) out.dims.back() = Dim();  // stopwords remove a data-dependent number of strings
  ctx.SetOutput(0, DType::kString, out);
  return Status::OK();
}

Status StringNormalizerCompute(KernelContext& ctx) {
  const Node& node = ctx.node();
  STRATA_ASSIGN_OR_RETURN(NormalizerAttrs a, ReadNormalizerAttrs(node));
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::kString || !(x.rank() == 1 || (x.rank() == 2 && x.dim(0) == 1)))
    return ctx.Error("X must be a string tensor of shape [C] or [1, C], got ", x.TypeString());
  std::unordered_set<std::string> stop;
  std::string folded;
  for (const std::string& w : a.stopwords) {
    if (!a.case_sensitive) STRATA_RETURN_IF_ERROR(ChangeCase(node, w, false, &folded));
    stop.insert(a.case_sensitive ? w : folded);
  }
  std::vector<std::string> kept;
  for (const std::string& s : x.values<std::string>()) {
    if (!stop.empty()) {
      if (!a.case_sensitive) STRATA_RETURN_IF_ERROR(ChangeCase(node, s, false, &folded));
      if (stop.count(a.case_sensitive ? s : folded)) continue;
    }
    kept.push_back(s);
  }
  if (a.change != CaseChange::kNone)
    for (std::string& s : kept) {
      std::string changed;
      STRATA_RETURN_IF_ERROR(ChangeCase(node, s, a.change == CaseChange::kUpper, &changed));
      s = std::move(changed);
    }
  if (kept.empty()) kept.emplace_back();
  const int64_t n = static_cast<int64_t>(kept.size());
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DType::kString, x.rank() == 1 ? Shape{n} : Shape{1, n}));
  std::move(kept.begin(), kept.end(), y->data<std::string>());
  return Status::OK();
}

}  // namespace

void RegisterStringNormalizer(OpRegistry* r) {
  OpSchema s;
  s.name = "StringNormalizer";
  s.since_version = 10;
  s.min_inputs = 1;
  s.max_inputs = 1;
  s.infer = StringNormalizerInfer;
  s.reference = StringNormalizerCompute;
  s.no_grad_reason = "string input and output";
  r->Add(std::move(s));
}

}  // namespace strata::ops
