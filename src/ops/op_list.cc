// Every op strata knows, in one explicit list (no static registration). One block per family (the folder under
// src/ops/defs/); keep each block sorted by op name.
#include "ops/op.h"

namespace strata::ops {

// ---- activation (defs/activation) ----
void RegisterCelu(OpRegistry* r);
void RegisterElu(OpRegistry* r);
void RegisterGelu(OpRegistry* r);
void RegisterHardSigmoid(OpRegistry* r);
void RegisterHardSwish(OpRegistry* r);
void RegisterLeakyRelu(OpRegistry* r);
void RegisterMish(OpRegistry* r);
void RegisterPRelu(OpRegistry* r);
void RegisterRelu(OpRegistry* r);
void RegisterSelu(OpRegistry* r);
void RegisterShrink(OpRegistry* r);
void RegisterSigmoid(OpRegistry* r);
void RegisterSoftplus(OpRegistry* r);
void RegisterSoftsign(OpRegistry* r);
void RegisterSwish(OpRegistry* r);  // strata.Swish
void RegisterTanh(OpRegistry* r);
void RegisterThresholdedRelu(OpRegistry* r);

static void RegisterActivationFamily(OpRegistry* r) {
  RegisterCelu(r);
  RegisterElu(r);
  RegisterGelu(r);
  RegisterHardSigmoid(r);
  RegisterHardSwish(r);
  RegisterLeakyRelu(r);
  RegisterMish(r);
  RegisterPRelu(r);
  RegisterRelu(r);
  RegisterSelu(r);
  RegisterShrink(r);
  RegisterSigmoid(r);
  RegisterSoftplus(r);
  RegisterSoftsign(r);
  RegisterSwish(r);
  RegisterTanh(r);
  RegisterThresholdedRelu(r);
}

// ---- fused: strata-domain ops written by the fusion and layout passes (defs/fused) ----
void RegisterChannelsLast(OpRegistry* r);
void RegisterConvMaxPool(OpRegistry* r);
void RegisterFusedConv(OpRegistry* r);
void RegisterFusedElementwise(OpRegistry* r);
void RegisterFusedGemm(OpRegistry* r);
void RegisterFusedMatMul(OpRegistry* r);
void RegisterQuantizedConv(OpRegistry* r);
void RegisterQuantizedMatMul(OpRegistry* r);

static void RegisterFusedFamily(OpRegistry* r) {
  RegisterChannelsLast(r);
  RegisterConvMaxPool(r);
  RegisterFusedConv(r);
  RegisterFusedElementwise(r);
  RegisterFusedGemm(r);
  RegisterFusedMatMul(r);
  RegisterQuantizedConv(r);
  RegisterQuantizedMatMul(r);
}

// ---- generator (defs/generator) ----
void RegisterBernoulli(OpRegistry* r);
void RegisterConstant(OpRegistry* r);
void RegisterConstantOfShape(OpRegistry* r);
void RegisterDropout(OpRegistry* r);
void RegisterMultinomial(OpRegistry* r);
void RegisterRandomNormal(OpRegistry* r);
void RegisterRandomNormalLike(OpRegistry* r);
void RegisterRandomUniform(OpRegistry* r);
void RegisterRandomUniformLike(OpRegistry* r);
void RegisterRange(OpRegistry* r);

static void RegisterGeneratorFamily(OpRegistry* r) {
  RegisterBernoulli(r);
  RegisterConstant(r);
  RegisterConstantOfShape(r);
  RegisterDropout(r);
  RegisterMultinomial(r);
  RegisterRandomNormal(r);
  RegisterRandomNormalLike(r);
  RegisterRandomUniform(r);
  RegisterRandomUniformLike(r);
  RegisterRange(r);
}

// ---- grad: strata-domain gradient helpers (defs/grad) ----
void RegisterAveragePoolGrad(OpRegistry* r);
void RegisterBatchNormalizationGrad(OpRegistry* r);
void RegisterConvBackwardData(OpRegistry* r);
void RegisterConvBackwardFilter(OpRegistry* r);
void RegisterGatherGrad(OpRegistry* r);
void RegisterGeluGrad(OpRegistry* r);
void RegisterHardSigmoidGrad(OpRegistry* r);
void RegisterHardSwishGrad(OpRegistry* r);
void RegisterLayerNormalizationGrad(OpRegistry* r);
void RegisterLogSoftmaxGrad(OpRegistry* r);
void RegisterMaxPoolGrad(OpRegistry* r);
void RegisterNegativeLogLikelihoodLossGrad(OpRegistry* r);
void RegisterReduceSumTo(OpRegistry* r);
void RegisterReluGrad(OpRegistry* r);
void RegisterSigmoidGrad(OpRegistry* r);
void RegisterSwishGrad(OpRegistry* r);
void RegisterSoftmaxCrossEntropyLossGrad(OpRegistry* r);
void RegisterSoftmaxGrad(OpRegistry* r);
void RegisterTanhGrad(OpRegistry* r);

static void RegisterGradFamily(OpRegistry* r) {
  RegisterAveragePoolGrad(r);
  RegisterBatchNormalizationGrad(r);
  RegisterConvBackwardData(r);
  RegisterConvBackwardFilter(r);
  RegisterGatherGrad(r);
  RegisterGeluGrad(r);
  RegisterHardSigmoidGrad(r);
  RegisterHardSwishGrad(r);
  RegisterLayerNormalizationGrad(r);
  RegisterLogSoftmaxGrad(r);
  RegisterMaxPoolGrad(r);
  RegisterNegativeLogLikelihoodLossGrad(r);
  RegisterReduceSumTo(r);
  RegisterReluGrad(r);
  RegisterSigmoidGrad(r);
  RegisterSwishGrad(r);
  RegisterSoftmaxCrossEntropyLossGrad(r);
  RegisterSoftmaxGrad(r);
  RegisterTanhGrad(r);
}

// ---- logic (defs/logic) ----
void RegisterAnd(OpRegistry* r);
void RegisterBitwiseAnd(OpRegistry* r);
void RegisterBitwiseNot(OpRegistry* r);
void RegisterBitwiseOr(OpRegistry* r);
void RegisterBitwiseXor(OpRegistry* r);
void RegisterEqual(OpRegistry* r);
void RegisterGreater(OpRegistry* r);
void RegisterGreaterOrEqual(OpRegistry* r);
void RegisterLess(OpRegistry* r);
void RegisterLessOrEqual(OpRegistry* r);
void RegisterNot(OpRegistry* r);
void RegisterOr(OpRegistry* r);
void RegisterWhere(OpRegistry* r);
void RegisterXor(OpRegistry* r);

static void RegisterLogicFamily(OpRegistry* r) {
  RegisterAnd(r);
  RegisterBitwiseAnd(r);
  RegisterBitwiseNot(r);
  RegisterBitwiseOr(r);
  RegisterBitwiseXor(r);
  RegisterEqual(r);
  RegisterGreater(r);
  RegisterGreaterOrEqual(r);
  RegisterLess(r);
  RegisterLessOrEqual(r);
  RegisterNot(r);
  RegisterOr(r);
  RegisterWhere(r);
  RegisterXor(r);
}

// ---- loss (defs/loss) ----
void RegisterNegativeLogLikelihoodLoss(OpRegistry* r);
void RegisterSoftmaxCrossEntropyLoss(OpRegistry* r);

static void RegisterLossFamily(OpRegistry* r) {
  RegisterNegativeLogLikelihoodLoss(r);
  RegisterSoftmaxCrossEntropyLoss(r);
}

// ---- math (defs/math) ----
void RegisterAbs(OpRegistry* r);
void RegisterAcos(OpRegistry* r);
void RegisterAcosh(OpRegistry* r);
void RegisterAdd(OpRegistry* r);
void RegisterAsin(OpRegistry* r);
void RegisterAsinh(OpRegistry* r);
void RegisterAtan(OpRegistry* r);
void RegisterAtanh(OpRegistry* r);
void RegisterBitShift(OpRegistry* r);
void RegisterCast(OpRegistry* r);
void RegisterCastLike(OpRegistry* r);
void RegisterCeil(OpRegistry* r);
void RegisterClip(OpRegistry* r);
void RegisterCos(OpRegistry* r);
void RegisterCosh(OpRegistry* r);
void RegisterCumSum(OpRegistry* r);
void RegisterDet(OpRegistry* r);
void RegisterDiv(OpRegistry* r);
void RegisterEinsum(OpRegistry* r);
void RegisterErf(OpRegistry* r);
void RegisterExp(OpRegistry* r);
void RegisterFloor(OpRegistry* r);
void RegisterGemm(OpRegistry* r);
void RegisterIsInf(OpRegistry* r);
void RegisterIsNaN(OpRegistry* r);
void RegisterLog(OpRegistry* r);
void RegisterMatMul(OpRegistry* r);
void RegisterMax(OpRegistry* r);
void RegisterMean(OpRegistry* r);
void RegisterMin(OpRegistry* r);
void RegisterMod(OpRegistry* r);
void RegisterMul(OpRegistry* r);
void RegisterNeg(OpRegistry* r);
void RegisterPow(OpRegistry* r);
void RegisterReciprocal(OpRegistry* r);
void RegisterRound(OpRegistry* r);
void RegisterSign(OpRegistry* r);
void RegisterSin(OpRegistry* r);
void RegisterSinh(OpRegistry* r);
void RegisterSqrt(OpRegistry* r);
void RegisterSub(OpRegistry* r);
void RegisterSum(OpRegistry* r);
void RegisterTan(OpRegistry* r);

static void RegisterMathFamily(OpRegistry* r) {
  RegisterAbs(r);
  RegisterAcos(r);
  RegisterAcosh(r);
  RegisterAdd(r);
  RegisterAsin(r);
  RegisterAsinh(r);
  RegisterAtan(r);
  RegisterAtanh(r);
  RegisterBitShift(r);
  RegisterCast(r);
  RegisterCastLike(r);
  RegisterCeil(r);
  RegisterClip(r);
  RegisterCos(r);
  RegisterCosh(r);
  RegisterCumSum(r);
  RegisterDet(r);
  RegisterDiv(r);
  RegisterEinsum(r);
  RegisterErf(r);
  RegisterExp(r);
  RegisterFloor(r);
  RegisterGemm(r);
  RegisterIsInf(r);
  RegisterIsNaN(r);
  RegisterLog(r);
  RegisterMatMul(r);
  RegisterMax(r);
  RegisterMean(r);
  RegisterMin(r);
  RegisterMod(r);
  RegisterMul(r);
  RegisterNeg(r);
  RegisterPow(r);
  RegisterReciprocal(r);
  RegisterRound(r);
  RegisterSign(r);
  RegisterSin(r);
  RegisterSinh(r);
  RegisterSqrt(r);
  RegisterSub(r);
  RegisterSum(r);
  RegisterTan(r);
}

// ---- nn: convolution, pooling, normalisation, softmax (defs/nn) ----
void RegisterAveragePool(OpRegistry* r);
void RegisterBatchNormalization(OpRegistry* r);
void RegisterConv(OpRegistry* r);
void RegisterConvTranspose(OpRegistry* r);
void RegisterGlobalAveragePool(OpRegistry* r);
void RegisterGlobalLpPool(OpRegistry* r);
void RegisterGlobalMaxPool(OpRegistry* r);
void RegisterHardmax(OpRegistry* r);
void RegisterInstanceNormalization(OpRegistry* r);
void RegisterLayerNormalization(OpRegistry* r);
void RegisterLogSoftmax(OpRegistry* r);
void RegisterLpNormalization(OpRegistry* r);
void RegisterLpPool(OpRegistry* r);
void RegisterLRN(OpRegistry* r);
void RegisterMaxPool(OpRegistry* r);
void RegisterMaxUnpool(OpRegistry* r);
void RegisterMeanVarianceNormalization(OpRegistry* r);
void RegisterSoftmax(OpRegistry* r);
void RegisterSyncBatchNormalization(OpRegistry* r);

static void RegisterNnFamily(OpRegistry* r) {
  RegisterAveragePool(r);
  RegisterBatchNormalization(r);
  RegisterConv(r);
  RegisterConvTranspose(r);
  RegisterGlobalAveragePool(r);
  RegisterGlobalLpPool(r);
  RegisterGlobalMaxPool(r);
  RegisterHardmax(r);
  RegisterInstanceNormalization(r);
  RegisterLayerNormalization(r);
  RegisterLogSoftmax(r);
  RegisterLpNormalization(r);
  RegisterLpPool(r);
  RegisterLRN(r);
  RegisterMaxPool(r);
  RegisterMaxUnpool(r);
  RegisterMeanVarianceNormalization(r);
  RegisterSoftmax(r);
  RegisterSyncBatchNormalization(r);
}

// ---- reduce (defs/reduce) ----
void RegisterArgMax(OpRegistry* r);
void RegisterArgMin(OpRegistry* r);
void RegisterReduceL1(OpRegistry* r);
void RegisterReduceL2(OpRegistry* r);
void RegisterReduceLogSum(OpRegistry* r);
void RegisterReduceLogSumExp(OpRegistry* r);
void RegisterReduceMax(OpRegistry* r);
void RegisterReduceMean(OpRegistry* r);
void RegisterReduceMin(OpRegistry* r);
void RegisterReduceProd(OpRegistry* r);
void RegisterReduceSum(OpRegistry* r);
void RegisterReduceSumSquare(OpRegistry* r);
void RegisterTopK(OpRegistry* r);

static void RegisterReduceFamily(OpRegistry* r) {
  RegisterArgMax(r);
  RegisterArgMin(r);
  RegisterReduceL1(r);
  RegisterReduceL2(r);
  RegisterReduceLogSum(r);
  RegisterReduceLogSumExp(r);
  RegisterReduceMax(r);
  RegisterReduceMean(r);
  RegisterReduceMin(r);
  RegisterReduceProd(r);
  RegisterReduceSum(r);
  RegisterReduceSumSquare(r);
  RegisterTopK(r);
}

// ---- tensor: shape and indexing (defs/tensor) ----
void RegisterCompress(OpRegistry* r);
void RegisterConcat(OpRegistry* r);
void RegisterDepthToSpace(OpRegistry* r);
void RegisterExpand(OpRegistry* r);
void RegisterEyeLike(OpRegistry* r);
void RegisterFlatten(OpRegistry* r);
void RegisterGather(OpRegistry* r);
void RegisterGatherElements(OpRegistry* r);
void RegisterGatherND(OpRegistry* r);
void RegisterIdentity(OpRegistry* r);
void RegisterNonZero(OpRegistry* r);
void RegisterOneHot(OpRegistry* r);
void RegisterPad(OpRegistry* r);
void RegisterReshape(OpRegistry* r);
void RegisterResize(OpRegistry* r);
void RegisterReverseSequence(OpRegistry* r);
void RegisterScatter(OpRegistry* r);
void RegisterScatterElements(OpRegistry* r);
void RegisterScatterND(OpRegistry* r);
void RegisterShape(OpRegistry* r);
void RegisterSize(OpRegistry* r);
void RegisterSlice(OpRegistry* r);
void RegisterSpaceToDepth(OpRegistry* r);
void RegisterSplit(OpRegistry* r);
void RegisterSqueeze(OpRegistry* r);
void RegisterTile(OpRegistry* r);
void RegisterTranspose(OpRegistry* r);
void RegisterTrilu(OpRegistry* r);
void RegisterUnique(OpRegistry* r);
void RegisterUnsqueeze(OpRegistry* r);
void RegisterUpsample(OpRegistry* r);

static void RegisterTensorFamily(OpRegistry* r) {
  RegisterCompress(r);
  RegisterConcat(r);
  RegisterDepthToSpace(r);
  RegisterExpand(r);
  RegisterEyeLike(r);
  RegisterFlatten(r);
  RegisterGather(r);
  RegisterGatherElements(r);
  RegisterGatherND(r);
  RegisterIdentity(r);
  RegisterNonZero(r);
  RegisterOneHot(r);
  RegisterPad(r);
  RegisterReshape(r);
  RegisterResize(r);
  RegisterReverseSequence(r);
  RegisterScatter(r);
  RegisterScatterElements(r);
  RegisterScatterND(r);
  RegisterShape(r);
  RegisterSize(r);
  RegisterSlice(r);
  RegisterSpaceToDepth(r);
  RegisterSplit(r);
  RegisterSqueeze(r);
  RegisterTile(r);
  RegisterTranspose(r);
  RegisterTrilu(r);
  RegisterUnique(r);
  RegisterUnsqueeze(r);
  RegisterUpsample(r);
}

// ---- train: strata-domain training ops (defs/train) ----
void RegisterAdamUpdate(OpRegistry* r);
void RegisterGlobalNorm(OpRegistry* r);
void RegisterRMSpropUpdate(OpRegistry* r);
void RegisterRegressionLoss(OpRegistry* r);
void RegisterRegressionLossGrad(OpRegistry* r);
void RegisterSGDUpdate(OpRegistry* r);
void RegisterSeededDropout(OpRegistry* r);
void RegisterSigmoidCrossEntropyWithLogits(OpRegistry* r);
void RegisterSigmoidCrossEntropyWithLogitsGrad(OpRegistry* r);
void RegisterSoftmaxCrossEntropyWithLogits(OpRegistry* r);
void RegisterSoftmaxCrossEntropyWithLogitsGrad(OpRegistry* r);

static void RegisterTrainFamily(OpRegistry* r) {
  RegisterAdamUpdate(r);
  RegisterGlobalNorm(r);
  RegisterRMSpropUpdate(r);
  RegisterRegressionLoss(r);
  RegisterRegressionLossGrad(r);
  RegisterSGDUpdate(r);
  RegisterSeededDropout(r);
  RegisterSigmoidCrossEntropyWithLogits(r);
  RegisterSigmoidCrossEntropyWithLogitsGrad(r);
  RegisterSoftmaxCrossEntropyWithLogits(r);
  RegisterSoftmaxCrossEntropyWithLogitsGrad(r);
}

// ---- control flow (defs/control) ----
void RegisterIf(OpRegistry* r);
void RegisterLoop(OpRegistry* r);
void RegisterScan(OpRegistry* r);

static void RegisterControlFamily(OpRegistry* r) {
  RegisterIf(r);
  RegisterLoop(r);
  RegisterScan(r);
}

// ---- optimizer: ai.onnx.preview.training update rules (defs/optimizer) ----
void RegisterAdagrad(OpRegistry* r);
void RegisterAdam(OpRegistry* r);
void RegisterMomentum(OpRegistry* r);

static void RegisterOptimizerFamily(OpRegistry* r) {
  RegisterAdagrad(r);
  RegisterAdam(r);
  RegisterMomentum(r);
}

// ---- quantization (defs/quant) ----
void RegisterConvInteger(OpRegistry* r);
void RegisterDequantizeLinear(OpRegistry* r);
void RegisterDynamicQuantizeLinear(OpRegistry* r);
void RegisterMatMulInteger(OpRegistry* r);
void RegisterQLinearConv(OpRegistry* r);
void RegisterQLinearMatMul(OpRegistry* r);
void RegisterQuantizeLinear(OpRegistry* r);

static void RegisterQuantFamily(OpRegistry* r) {
  RegisterConvInteger(r);
  RegisterDequantizeLinear(r);
  RegisterDynamicQuantizeLinear(r);
  RegisterMatMulInteger(r);
  RegisterQLinearConv(r);
  RegisterQLinearMatMul(r);
  RegisterQuantizeLinear(r);
}

// ---- recurrent (defs/rnn) ----
void RegisterGRU(OpRegistry* r);
void RegisterLSTM(OpRegistry* r);
void RegisterRNN(OpRegistry* r);

static void RegisterRnnFamily(OpRegistry* r) {
  RegisterGRU(r);
  RegisterLSTM(r);
  RegisterRNN(r);
}

// ---- signal processing (defs/signal) ----
void RegisterBlackmanWindow(OpRegistry* r);
void RegisterDFT(OpRegistry* r);
void RegisterHammingWindow(OpRegistry* r);
void RegisterHannWindow(OpRegistry* r);
void RegisterMelWeightMatrix(OpRegistry* r);
void RegisterSTFT(OpRegistry* r);

static void RegisterSignalFamily(OpRegistry* r) {
  RegisterBlackmanWindow(r);
  RegisterDFT(r);
  RegisterHammingWindow(r);
  RegisterHannWindow(r);
  RegisterMelWeightMatrix(r);
  RegisterSTFT(r);
}

// ---- text (defs/text) ----
void RegisterStringNormalizer(OpRegistry* r);
void RegisterTfIdfVectorizer(OpRegistry* r);

static void RegisterTextFamily(OpRegistry* r) {
  RegisterStringNormalizer(r);
  RegisterTfIdfVectorizer(r);
}

// ---- vision (defs/vision) ----
void RegisterGridSample(OpRegistry* r);
void RegisterNonMaxSuppression(OpRegistry* r);
void RegisterRoiAlign(OpRegistry* r);

static void RegisterVisionFamily(OpRegistry* r) {
  RegisterGridSample(r);
  RegisterNonMaxSuppression(r);
  RegisterRoiAlign(r);
}

void RegisterAllOps(OpRegistry* r) {
  RegisterActivationFamily(r);
  RegisterControlFamily(r);
  RegisterFusedFamily(r);
  RegisterGeneratorFamily(r);
  RegisterGradFamily(r);
  RegisterLogicFamily(r);
  RegisterLossFamily(r);
  RegisterMathFamily(r);
  RegisterNnFamily(r);
  RegisterOptimizerFamily(r);
  RegisterQuantFamily(r);
  RegisterReduceFamily(r);
  RegisterRnnFamily(r);
  RegisterSignalFamily(r);
  RegisterTensorFamily(r);
  RegisterTextFamily(r);
  RegisterVisionFamily(r);
  RegisterTrainFamily(r);
}

}  // namespace strata::ops
