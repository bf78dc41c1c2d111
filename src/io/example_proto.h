// Private to src/io: the generated tf.train.Example classes and helpers over them. Include only from .cc files of
// src/io (generated protobuf headers are heavy; see STYLE.md).
#pragma once

#include <google/protobuf/message_lite.h>

#include <string>

#include "tensorflow/core/example/example.pb.h"
#include "tensorflow/core/example/feature.pb.h"

namespace strata::io {

// Serialises with sorted map keys, so equal messages give equal bytes.
std::string SerializeDeterministic(const google::protobuf::MessageLite& msg);

}  // namespace strata::io
