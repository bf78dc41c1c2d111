#include "json_compare.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <map>

namespace strata::serve::testing {

namespace dom = simdjson::dom;

namespace {

bool IsInt(dom::element_type t) { return t == dom::element_type::INT64 || t == dom::element_type::UINT64; }

std::string Diff(const dom::element& a, const dom::element& e, const std::string& path) {
  const auto ta = a.type(), te = e.type();
  const bool num_a = IsInt(ta) || ta == dom::element_type::DOUBLE, num_e = IsInt(te) || te == dom::element_type::DOUBLE;
  if (num_a && num_e) {
    if (IsInt(ta) != IsInt(te))
      return path + ": " + simdjson::minify(a) + " vs expected " + simdjson::minify(e) + " (integer vs non-integer)";
    const double va = IsInt(ta) ? (ta == dom::element_type::INT64 ? double(int64_t(a)) : double(uint64_t(a))) : double(a);
    const double ve = IsInt(te) ? (te == dom::element_type::INT64 ? double(int64_t(e)) : double(uint64_t(e))) : double(e);
    if (std::fabs(va - ve) > 1e-6 * std::max(1.0, std::fabs(ve)))
      return path + ": " + simdjson::minify(a) + " vs expected " + simdjson::minify(e);
    return "";
  }
  if (ta != te) return path + ": " + simdjson::minify(a) + " vs expected " + simdjson::minify(e) + " (type)";
  if (ta == dom::element_type::ARRAY) {
    dom::array aa = a, ee = e;
    if (aa.size() != ee.size())
      return path + ": " + std::to_string(aa.size()) + " elements vs expected " + std::to_string(ee.size());
    size_t i = 0;
    auto it = ee.begin();
    for (dom::element x : aa) {
      std::string d = Diff(x, *it, path + "[" + std::to_string(i) + "]");
      if (!d.empty()) return d;
      ++it;
      ++i;
    }
    return "";
  }
  if (ta == dom::element_type::OBJECT) {
    dom::object oa = a, oe = e;
    std::map<std::string, dom::element> ma, me;
    for (auto kv : oa) ma[std::string(kv.key)] = kv.value;
    for (auto kv : oe) me[std::string(kv.key)] = kv.value;
    for (const auto& [k, v] : me)
      if (!ma.count(k)) return path + ": missing key \"" + k + "\"";
    for (const auto& [k, v] : ma)
      if (!me.count(k)) return path + ": unexpected key \"" + k + "\"";
    for (const auto& [k, v] : me) {
      std::string d = Diff(ma.at(k), v, path + "." + k);
      if (!d.empty()) return d;
    }
    return "";
  }
  if (simdjson::minify(a) != simdjson::minify(e))
    return path + ": " + simdjson::minify(a) + " vs expected " + simdjson::minify(e);
  return "";
}

}  // namespace

std::string JsonDiff(const std::string& actual, const std::string& expected) {
  dom::parser pa, pe;
  dom::element a, e;
  if (pa.parse(actual).get(a)) return "actual is not valid JSON: " + actual;
  if (pe.parse(expected).get(e)) return "expected is not valid JSON: " + expected;
  return Diff(a, e, "$");
}

void ExpectJsonEqImpl(const std::string& actual, const std::string& expected, const char* file, int line) {
  const std::string d = JsonDiff(actual, expected);
  if (!d.empty()) ADD_FAILURE_AT(file, line) << d << "\nactual: " << actual;
}

}  // namespace strata::serve::testing
