// Rng is public (strata/util.h): the library's own code includes it through this header.
#pragma once

#include "strata/util.h"
