// Helpers shared by the checkpoint files of src/train.
#pragma once

#include <dirent.h>

#include <string>

#include "core/json.h"
#include "strata/train.h"

namespace strata::train {

// Removes a file or a directory tree.
Status RemoveTree(const std::string& path);
// Where WriteCheckpoint builds `path` before renaming it: "<parent>/.<name>.tmp.<pid>".
std::string TempCheckpointPath(const std::string& path);
// state.json only (counters, metrics, history, metadata; no tensors read or verified). `tensors` receives its tensor
// table when not null.
StatusOr<Checkpoint> ReadCheckpointState(const std::string& path, Json* tensors = nullptr);

}  // namespace strata::train
