// Classify/Regress request bodies: "examples" (and "context") as tf.train.Example features, typed by the JSON
// lexical type (specs/tf-serving.md §1.6).
#include "serve/api/json_internal.h"

namespace strata::serve {

using namespace json_detail;  // NOLINT

namespace {

// One JSON scalar → the feature kind it implies, appended to `f`.
Status AppendValue(const dom::element& e, const std::string& name, Feature* f) {
  Feature::Kind kind;
  std::string_view b64;
  switch (e.type()) {
    case dom::element_type::STRING: kind = Feature::Kind::kBytes; break;
    case dom::element_type::DOUBLE: kind = Feature::Kind::kFloat; break;
    case dom::element_type::INT64:
    case dom::element_type::BOOL: kind = Feature::Kind::kInt64; break;
    case dom::element_type::UINT64:
      return InvalidArgumentError("Value ", Truncated(e), " of feature: ", name,
                                  " is too large. Only int64_t is supported.");
    case dom::element_type::OBJECT:
      if (IsB64(e, &b64)) {
        kind = Feature::Kind::kBytes;
        break;
      }
      [[fallthrough]];
    default:
      return InvalidArgumentError("Unsupported value for feature: ", name, ": ", Truncated(e), " (", JsonTypeName(e),
                                  "); features are strings, {\"b64\": ...}, numbers, booleans or lists of them");
  }
  if (f->kind != Feature::Kind::kNone && f->kind != kind) {
    const char* want = f->kind == Feature::Kind::kBytes ? "bytes" : f->kind == Feature::Kind::kFloat ? "float" : "int64";
    return InvalidArgumentError("Unexpected element type in feature: ", name, " expecting type: ", want);
  }
  f->kind = kind;
  switch (kind) {
    case Feature::Kind::kBytes:
      if (e.type() == dom::element_type::STRING) {
        f->bytes.emplace_back(e.get_string().value_unsafe());
      } else {
        std::string decoded;
        if (!Base64Decode(b64, &decoded)) return InvalidArgumentError("Unable to base64 decode feature: ", name);
        f->bytes.push_back(std::move(decoded));
      }
      break;
    case Feature::Kind::kFloat: f->floats.push_back(static_cast<float>(e.get_double().value_unsafe())); break;
    case Feature::Kind::kInt64:
      f->ints.push_back(e.type() == dom::element_type::BOOL ? (e.get_bool().value_unsafe() ? 1 : 0)
                                                            : e.get_int64().value_unsafe());
      break;
    case Feature::Kind::kNone: break;
  }
  return Status::OK();
}

StatusOr<Example> ParseExample(const dom::element& e, const std::string& where) {
  if (e.type() != dom::element_type::OBJECT)
    return InvalidArgumentError(where, " is not a JSON object of features: ", Truncated(e));
  Example ex;
  const dom::object obj = e.get_object().value_unsafe();
  for (auto kv : obj) {
    const std::string name(kv.key);
    Feature f;
    if (kv.value.type() == dom::element_type::ARRAY) {
      const dom::array list = kv.value.get_array().value_unsafe();
      for (dom::element v : list) {
        if (v.type() == dom::element_type::ARRAY)
          return InvalidArgumentError("Feature: ", name, " of ", where, " is a nested list; features are flat lists");
        STRATA_RETURN_IF_ERROR(AppendValue(v, name, &f));
      }
    } else {
      STRATA_RETURN_IF_ERROR(AppendValue(kv.value, name, &f));
    }
    ex[name] = std::move(f);
  }
  return ex;
}

}  // namespace

Status JsonRequest::Examples(std::string_view method, ExampleInput* input) const {
  dom::object root = impl_->root.get_object().value_unsafe();
  dom::element examples, context;
  if (root["examples"].get(examples))
    return InvalidArgumentError("When method is ", method, ", key 'examples' is expected and was not found");
  if (examples.type() != dom::element_type::ARRAY || examples.get_array().value_unsafe().size() == 0)
    return InvalidArgumentError("'examples' must be a non-empty list of objects");
  int64_t i = 0;
  const dom::array list = examples.get_array().value_unsafe();
  for (dom::element e : list) {
    STRATA_ASSIGN_OR_RETURN(Example ex, ParseExample(e, StrCat("example ", i++)));
    input->examples.push_back(std::move(ex));
  }
  if (!root["context"].get(context)) {
    STRATA_ASSIGN_OR_RETURN(Example ctx, ParseExample(context, "'context'"));
    input->context = std::move(ctx);
  }
  return Status::OK();
}

}  // namespace strata::serve
