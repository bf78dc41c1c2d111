// ModelCheckpoint (specs/tf-formats.md §5.3): a checkpoint directory per save, named by a str.format template,
// recorded in the `checkpoint` state file of its directory; save_best_only follows the §5.2 improvement rule.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/file_util.h"
#include "core/logging.h"
#include "strata/train.h"
#include "train/callback_util.h"

namespace strata::train {
namespace {

// Python's repr of a float: the shortest digits that read back, with ".0" on integral values.
std::string PyRepr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof(buf), "%.*g", p, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  // Python writes exponents with at least two digits, as C does: 1e-05.
  return s;
}

struct Spec {
  char fill = ' ';
  char align = 0;  // < > ^ =
  char sign = '-';
  int width = 0;
  int precision = -1;
  char type = 0;
};

StatusOr<Spec> ParseSpec(std::string_view s, std::string_view key) {
  Spec spec;
  size_t i = 0;
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (s.size() >= 2 && is_align(s[1])) {
    spec.fill = s[0];
    spec.align = s[1];
    i = 2;
  } else if (!s.empty() && is_align(s[0])) {
    spec.align = s[0];
    i = 1;
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) spec.sign = s[i++];
  if (i < s.size() && s[i] == '0') {
    if (!spec.align) {
      spec.fill = '0';
      spec.align = '=';
    }
    ++i;
  }
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && spec.width < 10000)
    spec.width = spec.width * 10 + (s[i++] - '0');
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i])))
      return InvalidArgumentError("format spec '", s, "' of '", key, "': precision missing after '.'");
    spec.precision = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && spec.precision < 100)
      spec.precision = spec.precision * 10 + (s[i++] - '0');
  }
  if (i < s.size()) spec.type = s[i++];
  if (i != s.size() || (spec.type && std::string_view("dfFeEgG%").find(spec.type) == std::string_view::npos))
    return InvalidArgumentError("unsupported format spec '", s, "' of '", key,
                                "' (supported: [[fill]align][sign][0][width][.precision][d|f|e|g|%])");
  return spec;
}

StatusOr<std::string> FormatOne(const Spec& spec, std::optional<int64_t> i, double d, std::string_view key) {
  std::string body;
  const bool negative = i ? *i < 0 : std::signbit(d) && !std::isnan(d);
  char buf[512];
  if (spec.type == 'd') {
    if (!i) return InvalidArgumentError("format code 'd' of '", key, "' needs an integer, '", key, "' is a float");
    std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(*i < 0 ? -*i : *i));
    body = buf;
  } else if (spec.type == 0 && spec.precision < 0) {
    body = i ? StrCat(*i < 0 ? -*i : *i) : PyRepr(std::fabs(d));
  } else if (spec.type == 0 && !i) {
    // Python's default float presentation with a precision: 'g', but scientific from exponent p-1 on and at least
    // one digit after the point in fixed notation.
    const int p = std::max(spec.precision, 1);
    std::snprintf(buf, sizeof(buf), "%.*e", p - 1, std::fabs(d));
    const int exp = std::atoi(std::strchr(buf, 'e') + 1);
    if (exp < -4 || exp >= p - 1) {
      std::string mantissa(buf, std::strchr(buf, 'e'));
      if (mantissa.find('.') != std::string::npos) {
        while (mantissa.back() == '0') mantissa.pop_back();
        if (mantissa.back() == '.') mantissa.pop_back();
      }
      body = mantissa + std::strchr(buf, 'e');
    } else {
      std::snprintf(buf, sizeof(buf), "%.*g", p, std::fabs(d));
      body = buf;
      if (body.find('.') == std::string::npos) body += ".0";
    }
  } else {
    const double v = std::fabs(i ? static_cast<double>(*i) : d) * (spec.type == '%' ? 100.0 : 1.0);
    const char conv = spec.type == '%' ? 'f' : spec.type == 0 ? 'g' : spec.type;
    const int prec = spec.precision >= 0 ? spec.precision : (spec.type == 0 ? 12 : 6);
    std::snprintf(buf, sizeof(buf), std::string("%.*").append(1, conv).c_str(), prec, v);
    body = buf;
    if (spec.type == '%') body += '%';
  }
  const std::string sign = negative ? "-" : spec.sign == '+' ? "+" : spec.sign == ' ' ? " " : "";
  const size_t len = sign.size() + body.size();
  const size_t pad = spec.width > static_cast<int>(len) ? spec.width - len : 0;
  const char align = spec.align ? spec.align : '>';  // numbers align right by default
  const std::string fill(pad, spec.fill);
  if (align == '<') return sign + body + fill;
  if (align == '=') return sign + fill + body;
  if (align == '^') return std::string(pad / 2, spec.fill) + sign + body + std::string(pad - pad / 2, spec.fill);
  return fill + sign + body;
}

class ModelCheckpointCallback final : public Callback {
 public:
  ModelCheckpointCallback(ModelCheckpointOptions o, Monitor m) : o_(std::move(o)), monitor_(m) {
    best_ = o_.initial_value_threshold;
  }

  Status OnEpochBegin(Trainer&, int epoch) override {
    epoch_ = epoch;
    return Status::OK();
  }

  Status OnTrainBatchEnd(Trainer& t, int64_t batch, const Logs& logs) override {
    if (o_.save_freq > 0 && ++batches_seen_ % o_.save_freq == 0) return Save(t, epoch_, batch, logs);
    return Status::OK();
  }

  Status OnEpochEnd(Trainer& t, int epoch, Logs& logs) override {
    if (o_.save_freq == 0) return Save(t, epoch, -1, logs);
    return Status::OK();
  }

 private:
  Status Save(Trainer& t, int epoch, int64_t batch, const Logs& logs) {
    if (o_.save_best_only) {
      const double* v = logs.Find(o_.monitor);
      if (v == nullptr) {
        std::vector<std::string> keys;
        for (const auto& [k, unused] : logs.items()) keys.push_back(k);
        LogWarning("ModelCheckpoint: can save best model only with ", o_.monitor, " available, found ",
                   StrJoin(keys, ", "), "; saving anyway");
      } else if (best_ && !monitor_.Improved(*v, *best_)) {
        if (o_.verbose > 0)
          std::printf("\nEpoch %d: %s did not improve from %.5f\n", epoch + 1, o_.monitor.c_str(), *best_);
        return Status::OK();
      } else {
        if (o_.verbose > 0)
          std::printf("\nEpoch %d: %s improved from %.5f to %.5f\n", epoch + 1, o_.monitor.c_str(),
                      best_ ? *best_ : (monitor_.higher_is_better ? -INFINITY : INFINITY), *v);
        best_ = *v;
      }
    }
    std::map<std::string, int64_t> ints = {{"epoch", epoch + 1}};
    if (batch >= 0) ints["batch"] = batch + 1;
    STRATA_ASSIGN_OR_RETURN(std::string path, FormatCheckpointPath(o_.filepath, ints, logs));
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    const std::string dir = Dirname(path).empty() ? "." : Dirname(path);
    auto& manager = managers_[dir];
    if (!manager) {
      STRATA_ASSIGN_OR_RETURN(manager,
                              CheckpointManager::Open(dir, {.max_to_keep = 0, .monitor = o_.monitor, .mode = o_.mode}));
    }
    auto config = t.model().GetConfig();  // a model with an indescribable layer is saved without its config
    STRATA_ASSIGN_OR_RETURN(
        std::string written,
        manager->Save(t.GetState(),
                      {.weights_only = o_.save_weights_only, .metrics = logs, .metadata = o_.metadata,
                       .model_config = config.ok() ? *config : std::string()},
                      Basename(path)));
    if (o_.verbose > 0) std::printf("\nEpoch %d: saving model to %s\n", epoch + 1, written.c_str());
    return Status::OK();
  }

  ModelCheckpointOptions o_;
  Monitor monitor_;
  std::optional<double> best_;
  int epoch_ = 0;
  int64_t batches_seen_ = 0;
  std::map<std::string, std::unique_ptr<CheckpointManager>> managers_;
};

}  // namespace

StatusOr<std::string> FormatCheckpointPath(const std::string& pattern, const std::map<std::string, int64_t>& ints,
                                           const Logs& values) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '}') {
      if (i + 1 < pattern.size() && pattern[i + 1] == '}') {
        out.push_back('}');
        ++i;
        continue;
      }
      return InvalidArgumentError("filepath '", pattern, "': single '}' at ", i, " (write '}}' for a brace)");
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    if (i + 1 < pattern.size() && pattern[i + 1] == '{') {
      out.push_back('{');
      ++i;
      continue;
    }
    const size_t close = pattern.find('}', i);
    if (close == std::string::npos) return InvalidArgumentError("filepath '", pattern, "': unclosed '{' at ", i);
    const std::string field = pattern.substr(i + 1, close - i - 1);
    const size_t colon = field.find(':');
    const std::string key = field.substr(0, colon);
    const std::string spec_text = colon == std::string::npos ? "" : field.substr(colon + 1);
    STRATA_ASSIGN_OR_RETURN(Spec spec, ParseSpec(spec_text, key));
    std::optional<int64_t> iv;
    double dv = 0;
    if (auto it = ints.find(key); it != ints.end()) {
      iv = it->second;
    } else if (const double* v = values.Find(key)) {
      dv = *v;
    } else {
      std::vector<std::string> keys;
      for (const auto& [k, unused] : ints) keys.push_back(k);
      for (const auto& [k, unused] : values.items()) keys.push_back(k);
      return InvalidArgumentError("filepath '", pattern, "' uses '{", key, "}', which is not available; keys are ",
                                  StrJoin(keys, ", "));
    }
    STRATA_ASSIGN_OR_RETURN(std::string text, FormatOne(spec, iv, dv, key));
    out += text;
    i = close;
  }
  return out;
}

StatusOr<std::shared_ptr<Callback>> ModelCheckpoint(ModelCheckpointOptions options) {
  if (options.filepath.empty()) return InvalidArgumentError("ModelCheckpoint: filepath is empty");
  if (options.save_freq < 0) return InvalidArgumentError("ModelCheckpoint: save_freq must be 0 (epoch) or > 0");
  STRATA_ASSIGN_OR_RETURN(Monitor m, MakeMonitor(options.monitor, options.mode, 0, "model_checkpoint"));
  return std::shared_ptr<Callback>(std::make_shared<ModelCheckpointCallback>(std::move(options), m));
}

}  // namespace strata::train
