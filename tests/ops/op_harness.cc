#include "tests/ops/op_harness.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/random.h"
#include "graph/autodiff.h"
#include "graph/infer.h"
#include "graph/interpreter.h"
#include "ops/op.h"
#include "ops/op_util.h"

namespace strata::testing {

std::string CompareTensors(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (!got.defined() || !want.defined()) return got.defined() == want.defined() ? "" : "one tensor is undefined";
  if (got.dtype() != want.dtype())
    return StrCat("dtype ", DTypeName(got.dtype()), " vs expected ", DTypeName(want.dtype()));
  if (got.shape() != want.shape())
    return StrCat("shape ", got.shape().ToString(), " vs expected ", want.shape().ToString());
  const int64_t n = got.num_elements();
  if (got.dtype() == DType::kString) {
    for (int64_t i = 0; i < n; ++i)
      if (got.data<std::string>()[i] != want.data<std::string>()[i]) return StrCat("string element ", i, " differs");
    return "";
  }
  if (got.dtype() == DType::kBool) {
    for (int64_t i = 0; i < n; ++i)
      if (got.data<bool>()[i] != want.data<bool>()[i]) return StrCat("bool element ", i, " differs");
    return "";
  }
  std::string out;
  Status s = ops::DispatchNumeric(got.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < n; ++i) {
      const double a = static_cast<double>(ops::ToCompute(got.data<T>()[i]));
      const double b = static_cast<double>(ops::ToCompute(want.data<T>()[i]));
      const bool ok = IsFloatingPoint(got.dtype()) ? ((std::isnan(a) && std::isnan(b)) || a == b ||
                                                      std::fabs(a - b) <= atol + rtol * std::fabs(b))
                                                   : a == b;
      if (!ok) {
        out = StrCat("element ", i, ": got ", a, ", expected ", b);
        break;
      }
    }
    return Status::OK();
  });
  return s.ok() ? out : s.message();
}

Tensor RandomF(std::vector<int64_t> shape, uint64_t seed, float lo, float hi) {
  Tensor t = Tensor::Empty(DType::kFloat32, Shape(shape));
  Rng rng(seed);
  for (float& v : t.mutable_values<float>()) v = lo + (hi - lo) * rng.Uniform();
  return t;
}

Tensor Cast(const Tensor& t, DType to) {
  Tensor out = Tensor::Empty(to, t.shape());
  STRATA_CHECK_OK(ops::ConvertElements(t, &out));
  return out;
}

graph::Attribute AInt(int64_t v) { return graph::Attribute::Int(v); }
graph::Attribute AFloat(float v) { return graph::Attribute::Float(v); }
graph::Attribute AInts(std::vector<int64_t> v) { return graph::Attribute::Ints(std::move(v)); }
graph::Attribute AFloats(std::vector<float> v) { return graph::Attribute::Floats(std::move(v)); }
graph::Attribute AString(std::string v) { return graph::Attribute::String(std::move(v)); }

namespace {

std::shared_ptr<graph::Model> OneNodeModel(const OpCase& c, std::vector<std::pair<std::string, Tensor>>* feeds) {
  auto m = std::make_shared<graph::Model>();
  m->opset_imports[""] = c.domain.empty() ? c.opset : 17;
  if (!c.domain.empty()) m->opset_imports[c.domain] = c.opset;
  graph::Node n;
  n.name = "op";
  n.op_type = c.op_type;
  n.domain = c.domain;
  n.opset = c.opset;
  n.attrs = c.attrs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.inputs[i].defined()) {
      n.inputs.push_back("");
      continue;
    }
    const std::string name = StrCat("in", i);
    n.inputs.push_back(name);
    const bool as_const =
        std::find(c.constant_inputs.begin(), c.constant_inputs.end(), static_cast<int>(i)) != c.constant_inputs.end();
    if (as_const) {
      m->graph.initializers[name] = c.inputs[i];
    } else {
      m->graph.inputs.push_back({name, c.inputs[i].dtype(), PartialShape::Of(c.inputs[i].shape())});
      feeds->emplace_back(name, c.inputs[i]);
    }
  }
  for (int i = 0; i < c.num_outputs; ++i) {
    n.outputs.push_back(StrCat("out", i));
    m->graph.outputs.push_back({StrCat("out", i), DType::kUndefined, PartialShape::Unknown()});
  }
  m->graph.nodes.push_back(std::move(n));
  return m;
}

}  // namespace

void RunOpCase(const OpCase& c) {
  SCOPED_TRACE(StrCat(c.op_type, " row '", c.label, "'"));
  const ops::OpSchema* schema = ops::OpRegistry::Global().Find(c.domain, c.op_type);
  ASSERT_NE(schema, nullptr) << "op " << c.op_type << " is not registered";
  std::vector<std::pair<std::string, Tensor>> feeds;
  auto model = OneNodeModel(c, &feeds);

  // Reference run.
  std::vector<Tensor> ref;
  Status s = graph::RunReference(*model, feeds, &ref);
  // Shape inference with the concrete input types (constants known).
  std::vector<graph::ValueInfo> in_types;
  for (const auto& in : model->graph.inputs) in_types.push_back(in);
  graph::InferredGraph inferred;
  graph::InferOptions no_fold;
  no_fold.fold_constants = false;
  Status si = graph::InferGraph(model->graph, in_types, no_fold, &inferred);

  if (c.expect_error != StatusCode::kOk) {
    // The error may surface in inference or at run time; at least one must report it, and neither may crash.
    const Status& err = !si.ok() ? si : s;
    ASSERT_FALSE(err.ok()) << "expected an error containing '" << c.error_substr << "'";
    EXPECT_EQ(err.code(), c.expect_error) << err.ToString();
    EXPECT_NE(err.message().find(c.error_substr), std::string::npos) << err.ToString();
    return;
  }
  ASSERT_TRUE(s.ok()) << "reference run: " << s.ToString();
  ASSERT_TRUE(si.ok()) << "shape inference: " << si.ToString();
  ASSERT_EQ(ref.size(), static_cast<size_t>(c.num_outputs));

  for (int i = 0; i < c.num_outputs; ++i) {
    const auto& vt = inferred.types.at(StrCat("out", i));
    EXPECT_EQ(vt.dtype, ref[i].dtype()) << "inferred dtype of output " << i;
    EXPECT_TRUE(vt.shape.Accepts(ref[i].shape()))
        << "inferred shape " << vt.shape.ToString() << " of output " << i << " vs actual " << ref[i].shape().ToString();
  }
  for (size_t i = 0; i < c.expected.size(); ++i) {
    std::string diff = CompareTensors(ref[i], c.expected[i], c.rtol, c.atol);
    EXPECT_EQ(diff, "") << "reference kernel, output " << i << ": " << ref[i].DebugString(8) << " vs expected "
                        << c.expected[i].DebugString(8);
  }

  // Every fast kernel that accepts this node, run directly.
  const graph::Node& node = model->graph.nodes[0];
  std::vector<ops::ValueType> in_vt, out_vt;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.inputs[i].defined()) {
      in_vt.emplace_back();
      continue;
    }
    ops::ValueType vt{c.inputs[i].dtype(), PartialShape::Of(c.inputs[i].shape()), nullptr};
    if (model->graph.initializers.count(node.inputs[i])) vt.value = &model->graph.initializers.at(node.inputs[i]);
    in_vt.push_back(vt);
  }
  for (const Tensor& t : ref) out_vt.push_back({t.dtype(), PartialShape::Of(t.shape()), nullptr});
  // The fast kernels' absolute tolerance per output: atol, or fast_tol_of_max of the output's largest magnitude.
  std::vector<double> fast_atol(ref.size(), std::max(c.atol, 1e-5));
  for (size_t i = 0; i < ref.size(); ++i) {
    if (c.fast_tol_of_max <= 0 || ref[i].dtype() != DType::kFloat32) continue;
    double max_abs = 0;
    for (float v : ref[i].values<float>()) max_abs = std::max(max_abs, std::fabs(static_cast<double>(v)));
    fast_atol[i] = std::max(fast_atol[i], c.fast_tol_of_max * max_abs);
  }
  for (const ops::KernelEntry& entry : schema->kernels) {
    auto k = entry.create(ops::KernelInit{node, in_vt, out_vt, c.conv_algorithm, c.precision});
    if (entry.name == c.kernel) {
      if (c.expect_decline) {
        EXPECT_FALSE(k.ok()) << "kernel " << entry.name << " was expected to decline this row";
      } else {
        EXPECT_TRUE(k.ok()) << "kernel " << entry.name << " declined: " << k.status().ToString();
      }
      if (k.ok() && !c.kernel_name.empty()) {
        EXPECT_EQ((*k)->name(), c.kernel_name) << "the name of kernel " << entry.name;
      }
    }
    if (!k.ok()) {
      EXPECT_EQ(k.status().code(), StatusCode::kUnimplemented) << entry.name << ": " << k.status().ToString();
      continue;
    }
    std::vector<const Tensor*> ins;
    for (const Tensor& t : c.inputs) ins.push_back(t.defined() ? &t : nullptr);
    const graph::ValueLookup none = [](const std::string&) -> const Tensor* { return nullptr; };
    graph::DynamicKernelContext ctx(node, ins, DefaultAllocator(), &none);
    Status ks = (*k)->Run(ctx);
    ASSERT_TRUE(ks.ok()) << "kernel " << entry.name << ": " << ks.ToString();
    for (int i = 0; i < c.num_outputs; ++i) {
      std::string diff = CompareTensors(ctx.outputs()[i], ref[i], std::max(c.rtol, 1e-4), fast_atol[i]);
      EXPECT_EQ(diff, "") << "kernel " << entry.name << " vs reference, output " << i;
    }
  }

  if (!c.grad_inputs.empty()) CheckGradient(c);

  // The planned executor, with and without fast kernels and passes.
  for (bool fast : {true, false}) {
    graph::SessionOptions opts;
    opts.use_fast_kernels = fast;
    opts.optimize = fast;
    opts.conv_algorithm = c.conv_algorithm;
    opts.precision = c.precision;
    auto session = graph::Session::Create(model, opts);
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    for (int rep = 0; rep < 2; ++rep) {  // the second run reuses the plan and its arena
      std::vector<Tensor> got;
      Status rs = (*session)->Run(feeds, &got);
      ASSERT_TRUE(rs.ok()) << "session (fast=" << fast << "): " << rs.ToString();
      ASSERT_EQ(got.size(), ref.size());
      for (size_t i = 0; i < got.size(); ++i) {
        std::string diff = fast ? CompareTensors(got[i], ref[i], std::max(c.rtol, 1e-4), fast_atol[i])
                                : CompareTensors(got[i], ref[i], 0, 0);
        EXPECT_EQ(diff, "") << "session (fast=" << fast << ") vs reference, output " << i;
      }
    }
  }
}

namespace {

// Appends loss = sum_k ReduceSumTo(out_k * R_k, []) to the one-node model and returns it.
std::shared_ptr<graph::Model> WithLoss(const graph::Model& m, const std::vector<Tensor>& outs) {
  auto lm = std::make_shared<graph::Model>(m);
  lm->opset_imports["strata"] = 1;
  graph::Graph& g = lm->graph;
  g.initializers["empty_shape"] = Tensor::FromVector<int64_t>({}, Shape{0});
  std::string acc;
  for (size_t k = 0; k < outs.size(); ++k) {
    if (outs[k].dtype() != DType::kFloat64) continue;
    Tensor r = Tensor::Empty(DType::kFloat64, outs[k].shape());
    Rng rng(100 + k);
    for (double& v : r.mutable_values<double>()) v = rng.UniformDouble() * 2 - 1;
    const std::string rk = StrCat("R", k), pk = StrCat("p", k), sk = StrCat("s", k);
    g.initializers[rk] = r;
    g.nodes.push_back(graph::Node{
        .name = StrCat("mul", k), .op_type = "Mul", .inputs = {StrCat("out", k), rk}, .outputs = {pk}, .opset = 17});
    g.nodes.push_back(graph::Node{.name = StrCat("sum", k),
                                  .op_type = "ReduceSumTo",
                                  .domain = "strata",
                                  .inputs = {pk, "empty_shape"},
                                  .outputs = {sk},
                                  .opset = 1});
    if (acc.empty()) {
      acc = sk;
    } else {
      const std::string next = StrCat("acc", k);
      g.nodes.push_back(
          graph::Node{.name = StrCat("add", k), .op_type = "Add", .inputs = {acc, sk}, .outputs = {next}, .opset = 17});
      acc = next;
    }
  }
  g.outputs = {{acc, DType::kFloat64, PartialShape::Of(Shape{})}};
  return lm;
}

double LossOf(const graph::Model& m, const std::vector<std::pair<std::string, Tensor>>& feeds) {
  std::vector<Tensor> out;
  Status s = graph::RunReference(m, feeds, &out);
  STRATA_CHECK(s.ok(), s.ToString());
  return out[0].data<double>()[0];
}

}  // namespace

void CheckGradient(const OpCase& c) {
  SCOPED_TRACE("gradient check");
  std::vector<std::pair<std::string, Tensor>> feeds;
  auto model = OneNodeModel(c, &feeds);
  std::vector<Tensor> outs;
  ASSERT_TRUE(graph::RunReference(*model, feeds, &outs).ok());
  auto lm = WithLoss(*model, outs);
  ASSERT_FALSE(lm->graph.outputs.empty()) << "no float64 output to differentiate";
  const std::string loss = lm->graph.outputs[0].name;

  // Analytic gradients through autodiff.
  graph::Model tm = *lm;
  std::vector<std::string> wrt;
  for (int i : c.grad_inputs) {
    ASSERT_EQ(c.inputs[i].dtype(), DType::kFloat64) << "gradient rows need float64 inputs (input " << i << ")";
    wrt.push_back(StrCat("in", i));
  }
  std::map<std::string, std::string> grads;
  Status s = graph::BuildGradients(&tm.graph, loss, wrt, {}, &grads);
  ASSERT_TRUE(s.ok()) << s.ToString();
  tm.graph.outputs.clear();
  for (const std::string& w : wrt) tm.graph.outputs.push_back({grads[w], DType::kFloat64, PartialShape::Unknown()});
  std::vector<Tensor> analytic;
  s = graph::RunReference(tm, feeds, &analytic);
  ASSERT_TRUE(s.ok()) << "running the gradient graph: " << s.ToString();
  // The planned executor must agree with the interpreter on the training graph too.
  auto session = graph::Session::Create(std::make_shared<graph::Model>(tm));
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<Tensor> planned;
  ASSERT_TRUE((*session)->Run(feeds, &planned).ok());

  for (size_t w = 0; w < wrt.size(); ++w) {
    const int input = c.grad_inputs[w];
    ASSERT_EQ(analytic[w].shape(), c.inputs[input].shape()) << "gradient shape of input " << input;
    EXPECT_EQ(CompareTensors(planned[w], analytic[w], 1e-12, 1e-12), "") << "session vs interpreter, input " << input;
    auto feed_index = std::find_if(feeds.begin(), feeds.end(), [&](const auto& f) { return f.first == wrt[w]; });
    ASSERT_NE(feed_index, feeds.end()) << "gradient inputs must be graph inputs, not constants";
    const int64_t n = c.inputs[input].num_elements();
    for (int64_t j = 0; j < n; ++j) {
      auto plus = feeds, minus = feeds;
      Tensor xp = feed_index->second.Clone(), xm = feed_index->second.Clone();
      xp.data<double>()[j] += c.grad_eps;
      xm.data<double>()[j] -= c.grad_eps;
      plus[feed_index - feeds.begin()].second = xp;
      minus[feed_index - feeds.begin()].second = xm;
      const double numeric = (LossOf(*lm, plus) - LossOf(*lm, minus)) / (2 * c.grad_eps);
      const double got = analytic[w].data<double>()[j];
      EXPECT_NEAR(got, numeric, c.grad_atol + c.grad_rtol * std::fabs(numeric))
          << "d loss / d input " << input << "[" << j << "]";
    }
  }
}

StatusOr<std::vector<Tensor>> RunNamedKernel(const OpCase& c) {
  const ops::OpSchema* schema = ops::OpRegistry::Global().Find(c.domain, c.op_type);
  if (schema == nullptr) return NotFoundError("op ", c.op_type, " is not registered");
  std::vector<std::pair<std::string, Tensor>> feeds;
  auto model = OneNodeModel(c, &feeds);
  const graph::Node& node = model->graph.nodes[0];
  std::vector<ops::ValueType> in_vt, out_vt(static_cast<size_t>(c.num_outputs));
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.inputs[i].defined()) {
      in_vt.emplace_back();
      continue;
    }
    ops::ValueType vt{c.inputs[i].dtype(), PartialShape::Of(c.inputs[i].shape()), nullptr};
    if (model->graph.initializers.count(node.inputs[i])) vt.value = &model->graph.initializers.at(node.inputs[i]);
    in_vt.push_back(vt);
  }
  for (const ops::KernelEntry& entry : schema->kernels) {
    if (entry.name != c.kernel) continue;
    STRATA_ASSIGN_OR_RETURN(auto kernel,
                            entry.create(ops::KernelInit{node, in_vt, out_vt, c.conv_algorithm, c.precision}));
    std::vector<const Tensor*> ins;
    for (const Tensor& t : c.inputs) ins.push_back(t.defined() ? &t : nullptr);
    const graph::ValueLookup none = [](const std::string&) -> const Tensor* { return nullptr; };
    graph::DynamicKernelContext ctx(node, ins, DefaultAllocator(), &none);
    STRATA_RETURN_IF_ERROR(kernel->Run(ctx));
    return std::vector<Tensor>(ctx.outputs().begin(), ctx.outputs().begin() + c.num_outputs);
  }
  return NotFoundError("no kernel '", c.kernel, "' is registered for ", c.op_type);
}

OpCase ChannelsLastCase(std::string label, std::string op, std::string op_domain, std::vector<Tensor> inputs,
                        graph::AttributeMap attrs, std::string kernel) {
  attrs["op"] = AString(std::move(op));
  if (!op_domain.empty()) attrs["op_domain"] = AString(std::move(op_domain));
  return {.label = std::move(label),
          .op_type = "ChannelsLast",
          .domain = "strata",
          .opset = 17,
          .attrs = std::move(attrs),
          .inputs = std::move(inputs),
          .kernel = std::move(kernel)};
}

}  // namespace strata::testing
