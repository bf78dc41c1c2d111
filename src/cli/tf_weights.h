// Keras weights from a TensorFlow checkpoint (tf.train.Checkpoint(model=keras_model, ...)) for a strata model:
// `strata train --weights PREFIX` and `strata tf_checkpoint import` (both in the CLI, which sees nn and tf).
#pragma once

#include <map>
#include <string>

#include "strata/nn.h"

namespace strata::cli {

// True when `path` is a TF checkpoint prefix: PATH.index exists and PATH itself does not.
bool IsTfCheckpointPrefix(const std::string& path);

// The weights of `model` (built) from the Keras model `model_path` of the TF checkpoint `prefix`, under the model's
// weight names. By name when every weight of the model is found under its Keras path (the checkpoint's full_name,
// with or without the Keras model's name in front); otherwise by position: the i-th layer with variables of the
// checkpoint gives the i-th layer with weights of the model, each weight matched by its last name component
// ("kernel", "moving_mean"). Layer counts or variable names that differ are an InvalidArgument listing both sides;
// shapes are checked when the tensors are assigned (nn::AssignWeights).
// `keys`, when given, receives each weight's bundle key in the checkpoint.
StatusOr<nn::WeightsFile> ReadKerasTfCheckpoint(const nn::Model& model, const std::string& prefix,
                                                const std::string& model_path = "model",
                                                std::map<std::string, std::string>* keys = nullptr);

}  // namespace strata::cli
