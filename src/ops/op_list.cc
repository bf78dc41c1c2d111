// Every op strata knows, in one explicit list (no static registration). One block per family (the folder under
// src/ops/defs/); keep each block sorted by op name.
#include "ops/op.h"

namespace strata::ops {

// ---- activation (defs/activation) ----
void RegisterRelu(OpRegistry* r);

static void RegisterActivationFamily(OpRegistry* r) {
  RegisterRelu(r);
}

// ---- generator (defs/generator) ----
void RegisterConstant(OpRegistry* r);

static void RegisterGeneratorFamily(OpRegistry* r) {
  RegisterConstant(r);
}

// ---- grad: strata-domain gradient helpers (defs/grad) ----
void RegisterReduceSumTo(OpRegistry* r);

static void RegisterGradFamily(OpRegistry* r) {
  RegisterReduceSumTo(r);
}

// ---- logic (defs/logic) ----

static void RegisterLogicFamily(OpRegistry* r) { (void)r; }

// ---- loss (defs/loss) ----

static void RegisterLossFamily(OpRegistry* r) { (void)r; }

// ---- math (defs/math) ----
void RegisterAdd(OpRegistry* r);
void RegisterDiv(OpRegistry* r);
void RegisterMatMul(OpRegistry* r);
void RegisterMul(OpRegistry* r);
void RegisterSub(OpRegistry* r);

static void RegisterMathFamily(OpRegistry* r) {
  RegisterAdd(r);
  RegisterDiv(r);
  RegisterMatMul(r);
  RegisterMul(r);
  RegisterSub(r);
}

// ---- nn: convolution, pooling, normalisation, softmax (defs/nn) ----

static void RegisterNnFamily(OpRegistry* r) { (void)r; }

// ---- reduce (defs/reduce) ----

static void RegisterReduceFamily(OpRegistry* r) { (void)r; }

// ---- tensor: shape and indexing (defs/tensor) ----
void RegisterIdentity(OpRegistry* r);
void RegisterReshape(OpRegistry* r);
void RegisterShape(OpRegistry* r);
void RegisterSize(OpRegistry* r);

static void RegisterTensorFamily(OpRegistry* r) {
  RegisterIdentity(r);
  RegisterReshape(r);
  RegisterShape(r);
  RegisterSize(r);
}

// ---- control flow (defs/control) ----

static void RegisterControlFamily(OpRegistry* r) { (void)r; }

void RegisterAllOps(OpRegistry* r) {
  RegisterActivationFamily(r);
  RegisterControlFamily(r);
  RegisterGeneratorFamily(r);
  RegisterGradFamily(r);
  RegisterLogicFamily(r);
  RegisterLossFamily(r);
  RegisterMathFamily(r);
  RegisterNnFamily(r);
  RegisterReduceFamily(r);
  RegisterTensorFamily(r);
}

}  // namespace strata::ops
