// Opens a region of variant code (isa.h); isa_end.h closes it. No include guard: included once per region.
#include "ops/cpu/isa.h"

#if defined(STRATA_CPU_BUILD_AVX512)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,bmi,bmi2,popcnt,avx512f,avx512bw,avx512dq,avx512vl"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,bmi,bmi2,popcnt,avx512f,avx512bw,avx512dq,avx512vl")
#endif
#endif
