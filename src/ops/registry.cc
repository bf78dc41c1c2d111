#include "ops/op.h"

namespace strata::ops {
namespace {

std::string Key(std::string_view domain, std::string_view op) {
  std::string d(domain);
  if (d == "ai.onnx") d.clear();
  return StrCat(d, ":", op);
}

class ReferenceKernel final : public Kernel {
 public:
  explicit ReferenceKernel(ComputeFn fn) : fn_(fn) {}
  Status Run(KernelContext& ctx) const override { return fn_(ctx); }
  std::string_view name() const override { return "reference"; }

 private:
  ComputeFn fn_;
};

}  // namespace

Status InferContext::InferSubgraph(const graph::Graph& body, const std::vector<ValueType>& inputs,
                                   std::vector<ValueType>* outputs) const {
  outputs->clear();
  if (subgraph_infer_ != nullptr && *subgraph_infer_) {
    STRATA_RETURN_IF_ERROR((*subgraph_infer_)(body, inputs, outputs));
    for (ValueType& o : *outputs) o.value = nullptr;
    return Status::OK();
  }
  for (const graph::ValueInfo& o : body.outputs) outputs->push_back(ValueType{o.dtype, o.shape, nullptr});
  return Status::OK();
}

void OpRegistry::Add(OpSchema schema) {
  std::string key = Key(schema.domain, schema.name);
  STRATA_CHECK(ops_.find(key) == ops_.end(), "op ", key, " registered twice");
  STRATA_CHECK(schema.infer != nullptr, "op ", key, " has no shape inference");
  STRATA_CHECK(schema.reference != nullptr, "op ", key, " has no reference kernel");
  ops_.emplace(std::move(key), std::make_unique<OpSchema>(std::move(schema)));
}

void OpRegistry::AddKernel(std::string_view domain, std::string_view op, KernelEntry kernel) {
  auto it = ops_.find(Key(domain, op));
  STRATA_CHECK(it != ops_.end(), "kernel '", kernel.name, "' for unknown op ", Key(domain, op));
  it->second->kernels.push_back(std::move(kernel));
}

const OpSchema* OpRegistry::Find(std::string_view domain, std::string_view op) const {
  auto it = ops_.find(Key(domain, op));
  return it == ops_.end() ? nullptr : it->second.get();
}

std::vector<const OpSchema*> OpRegistry::All() const {
  std::vector<const OpSchema*> out;
  for (const auto& [k, v] : ops_) out.push_back(v.get());
  return out;
}

const OpRegistry& OpRegistry::Global() {
  static const OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    RegisterAllOps(r);
    RegisterAllKernels(r);
    return r;
  }();
  return *registry;
}

StatusOr<void*> KernelContext::Scratch(size_t bytes) {
  STRATA_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(DType::kUInt8, Shape{static_cast<int64_t>(bytes)}, allocator()));
  scratch_.push_back(std::move(t));
  return scratch_.back().raw_data();
}

std::unique_ptr<Kernel> MakeReferenceKernel(const OpSchema& schema) {
  return std::make_unique<ReferenceKernel>(schema.reference);
}

}  // namespace strata::ops
