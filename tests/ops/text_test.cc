// Table rows for the text ops StringNormalizer and TfIdfVectorizer. StringNormalizer rows follow the ONNX spec's
// examples, with Unicode case mapping checked against Python's str.upper()/str.lower() on single code points.
// TfIdfVectorizer rows are the spec's examples plus cases counted by a brute-force Python loop over every pool n-gram,
// skip distance and start position (unigrams counted once).
#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

using graph::Attribute;

Tensor S(std::vector<std::string> v, std::vector<int64_t> shape) {
  return T_<std::string>(std::move(v), std::move(shape));
}

TEST(StringNormalizerTest, StopwordsAndCase) {
  const Tensor days = S({"monday", "tuesday", "wednesday", "thursday"}, {4});
  const Attribute monday = Attribute::Strings({"monday"});
  RunOpCase({.label = "no stopwords, no change",
             .op_type = "StringNormalizer",
             .attrs = {{"is_case_sensitive", AInt(1)}},
             .inputs = {S({"monday", "tuesday"}, {2})},
             .expected = {S({"monday", "tuesday"}, {2})}});
  RunOpCase({.label = "case-sensitive stopword, lower",
             .op_type = "StringNormalizer",
             .attrs = {{"case_change_action", AString("LOWER")}, {"is_case_sensitive", AInt(1)}, {"stopwords", monday}},
             .inputs = {days},
             .expected = {S({"tuesday", "wednesday", "thursday"}, {3})}});
  RunOpCase({.label = "upper",
             .op_type = "StringNormalizer",
             .attrs = {{"case_change_action", AString("UPPER")}, {"is_case_sensitive", AInt(1)}, {"stopwords", monday}},
             .inputs = {days},
             .expected = {S({"TUESDAY", "WEDNESDAY", "THURSDAY"}, {3})}});
  RunOpCase({.label = "everything removed",
             .op_type = "StringNormalizer",
             .attrs = {{"case_change_action", AString("UPPER")}, {"is_case_sensitive", AInt(1)}, {"stopwords", monday}},
             .inputs = {S({"monday", "monday"}, {2})},
             .expected = {S({""}, {1})}});
  RunOpCase({.label = "case-insensitive, [1, C]",
             .op_type = "StringNormalizer",
             .attrs = {{"case_change_action", AString("UPPER")}, {"stopwords", monday}},
             .inputs = {S({"Monday", "tuesday", "wednesday", "MONDAY", "tuesday", "wednesday"}, {1, 6})},
             .expected = {S({"TUESDAY", "WEDNESDAY", "TUESDAY", "WEDNESDAY"}, {1, 4})}});
  RunOpCase({.label = "everything removed, [1, C]",
             .op_type = "StringNormalizer",
             .attrs = {{"stopwords", monday}},
             .inputs = {S({"MONDAY"}, {1, 1})},
             .expected = {S({""}, {1, 1})}});
  RunOpCase({.label = "case-sensitive keeps other cases",
             .op_type = "StringNormalizer",
             .attrs = {{"is_case_sensitive", AInt(1)}, {"stopwords", monday}, {"locale", AString("en_US")}},
             .inputs = {S({"Monday", "monday"}, {2})},
             .expected = {S({"Monday"}, {1})}});
  // Non-ASCII text: "é" <-> "É", "ü" <-> "Ü", Greek "σ" <-> "Σ"; "ß" has no one-character upper case.
  RunOpCase({.label = "unicode upper",
             .op_type = "StringNormalizer",
             .attrs = {{"case_change_action", AString("UPPER")}},
             .inputs = {S({"caf\xc3\xa9", "gr\xc3\xbc\xc3\x9f", "\xcf\x83x"}, {3})},
             .expected = {S({"CAF\xc3\x89", "GR\xc3\x9c\xc3\x9f", "\xce\xa3X"}, {3})}});
  RunOpCase({.label = "unicode stopword, case-insensitive",
             .op_type = "StringNormalizer",
             .attrs = {{"case_change_action", AString("LOWER")}, {"stopwords", Attribute::Strings({"\xc3\x84rger"})}},
             .inputs = {S({"\xc3\xa4RGER", "Ende"}, {2})},
             .expected = {S({"ende"}, {1})}});
  RunOpCase(
      {.label = "empty input", .op_type = "StringNormalizer", .inputs = {S({}, {0})}, .expected = {S({""}, {1})}});
  RunOpCase({.label = "other locale",
             .op_type = "StringNormalizer",
             .attrs = {{"locale", AString("tr_TR")}},
             .inputs = {days},
             .expect_error = StatusCode::kUnimplemented,
             .error_substr = "locale 'tr_TR'"});
  RunOpCase({.label = "invalid UTF-8",
             .op_type = "StringNormalizer",
             .attrs = {{"case_change_action", AString("UPPER")}},
             .inputs = {S({"ok\xc3"}, {1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "not valid UTF-8"});
  RunOpCase({.label = "two rows",
             .op_type = "StringNormalizer",
             .inputs = {S({"a", "b"}, {2, 1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "shape [C] or [1, C]"});
  RunOpCase({.label = "bad action",
             .op_type = "StringNormalizer",
             .attrs = {{"case_change_action", AString("TITLE")}},
             .inputs = {days},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "NONE, LOWER or UPPER"});
  RunOpCase({.label = "numbers",
             .op_type = "StringNormalizer",
             .inputs = {I64({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "X must be a string tensor"});
}

graph::AttributeMap TfIdf(std::string mode, int64_t min_gram, int64_t max_gram, int64_t skip,
                          std::vector<int64_t> counts, std::vector<int64_t> indexes) {
  return {{"mode", AString(std::move(mode))},         {"min_gram_length", AInt(min_gram)},
          {"max_gram_length", AInt(max_gram)},        {"max_skip_count", AInt(skip)},
          {"ngram_counts", AInts(std::move(counts))}, {"ngram_indexes", AInts(std::move(indexes))}};
}

TEST(TfIdfVectorizerTest, Counts) {
  // The spec's pool: unigrams 2, 3, 5, 4 and bigrams (5, 6), (7, 8), (6, 7).
  const Attribute pool = AInts({2, 3, 5, 4, 5, 6, 7, 8, 6, 7});
  const Tensor x = I32({1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8}, {12});
  auto attrs = [&](int64_t mn, int64_t mx, int64_t skip) {
    auto a = TfIdf("TF", mn, mx, skip, {0, 4}, {0, 1, 2, 3, 4, 5, 6});
    a["pool_int64s"] = pool;
    return a;
  };
  RunOpCase({.label = "bigrams, skip 0",
             .op_type = "TfIdfVectorizer",
             .attrs = attrs(2, 2, 0),
             .inputs = {x},
             .expected = {F({0, 0, 0, 0, 1, 1, 1}, {7})}});
  RunOpCase({.label = "bigrams, skip 5",
             .op_type = "TfIdfVectorizer",
             .attrs = attrs(2, 2, 5),
             .inputs = {x},
             .expected = {F({0, 0, 0, 0, 1, 3, 1}, {7})}});
  RunOpCase({.label = "uni- and bigrams, skip 5 (unigrams once)",
             .op_type = "TfIdfVectorizer",
             .attrs = attrs(1, 2, 5),
             .inputs = {x},
             .expected = {F({0, 3, 1, 0, 1, 3, 1}, {7})}});
  RunOpCase({.label = "batch, int64",
             .op_type = "TfIdfVectorizer",
             .attrs = attrs(2, 2, 0),
             .inputs = {I64({1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8}, {2, 6})},
             .expected = {F({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1}, {2, 7})}});
  // Strings: pool a, b, c | ab, ba | acb, output indexes permuted, on rows "abacba" and "ccabxb".
  const Tensor words = S({"a", "b", "a", "c", "b", "a", "c", "c", "a", "b", "x", "b"}, {2, 6});
  auto str_attrs = [&](std::string mode, int64_t mn, int64_t mx, int64_t skip, bool weighted) {
    auto a = TfIdf(std::move(mode), mn, mx, skip, {0, 3, 7}, {5, 0, 1, 2, 3, 4});
    a["pool_strings"] = Attribute::Strings({"a", "b", "c", "a", "b", "b", "a", "a", "c", "b"});
    if (weighted) a["weights"] = AFloats({0.5f, 1, 2, 3, 0.25f, 4});
    return a;
  };
  RunOpCase({.label = "strings, 1-3 grams, skip 2",
             .op_type = "TfIdfVectorizer",
             .attrs = str_attrs("TF", 1, 3, 2, false),
             .inputs = {words},
             .expected = {F({2, 1, 2, 2, 1, 3, 2, 2, 2, 0, 0, 1}, {2, 6})}});
  RunOpCase({.label = "TFIDF, 2-3 grams, skip 1",
             .op_type = "TfIdfVectorizer",
             .attrs = str_attrs("TFIDF", 2, 3, 1, true),
             .inputs = {words},
             .expected = {F({0, 0, 6, 0.5f, 4, 0, 0, 0, 3, 0, 0, 0}, {2, 6})}});
  RunOpCase({.label = "IDF, unigrams",
             .op_type = "TfIdfVectorizer",
             .attrs = str_attrs("IDF", 1, 1, 0, true),
             .inputs = {words},
             .expected = {F({1, 2, 0, 0, 0, 0.5f, 1, 2, 0, 0, 0, 0.5f}, {2, 6})}});
  RunOpCase({.label = "empty rows",
             .op_type = "TfIdfVectorizer",
             .attrs = attrs(1, 2, 3),
             .inputs = {I32({}, {2, 0})},
             .expected = {F(std::vector<float>(14, 0), {2, 7})}});
  RunOpCase({.label = "huge skip is harmless",
             .op_type = "TfIdfVectorizer",
             .attrs = attrs(2, 2, int64_t{1} << 62),
             .inputs = {x},
             .expected = {F({0, 0, 0, 0, 1, 3, 1}, {7})}});
}

TEST(TfIdfVectorizerTest, Errors) {
  auto attrs = TfIdf("TF", 1, 2, 0, {0, 4}, {0, 1, 2, 3, 4, 5, 6});
  attrs["pool_int64s"] = AInts({2, 3, 5, 4, 5, 6, 7});
  RunOpCase({.label = "pool does not split into bigrams",
             .op_type = "TfIdfVectorizer",
             .attrs = attrs,
             .inputs = {I32({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "into whole 2-grams"});
  attrs["pool_int64s"] = AInts({2, 3, 5, 4, 5, 6, 7, 8});
  RunOpCase({.label = "ngram_indexes count",
             .op_type = "TfIdfVectorizer",
             .attrs = attrs,
             .inputs = {I32({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "the pool holds 6 n-grams but ngram_indexes has 7"});
  attrs["mode"] = AString("BM25");
  RunOpCase({.label = "mode",
             .op_type = "TfIdfVectorizer",
             .attrs = attrs,
             .inputs = {I32({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "mode must be TF, IDF or TFIDF"});
  attrs["mode"] = AString("TF");
  RunOpCase({.label = "strings into an int64 pool",
             .op_type = "TfIdfVectorizer",
             .attrs = attrs,
             .inputs = {S({"a"}, {1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "needs int32 or int64 input"});
  attrs["pool_strings"] = Attribute::Strings({"a"});
  RunOpCase({.label = "two pools",
             .op_type = "TfIdfVectorizer",
             .attrs = attrs,
             .inputs = {I32({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "exactly one of pool_int64s and pool_strings"});
}

}  // namespace
}  // namespace strata::testing
