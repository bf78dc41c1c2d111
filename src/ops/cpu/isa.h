// The hand-written kernels with vector code (the files listed in STRATA_OPS_CPU_VARIANTS, src/ops/CMakeLists.txt)
// are compiled twice, into two namespaces, and chosen per CPU at run time (dispatch.cc):
//   strata::ops::cpu::generic  the build's own flags, without AVX-512 (a real fallback even in a -march=native
//                              build): baseline x86-64 in the default, portable build;
//   strata::ops::cpu::avx512   the build's flags plus AVX-512 F/BW/DQ/VL (and AVX2, FMA, BMI/BMI2, POPCNT), through
//                              `#pragma GCC target` regions (isa_begin.h / isa_end.h), compiled from a generated
//                              wrapper that defines STRATA_CPU_BUILD_AVX512.
// Only code inside a region gets the AVX-512 target: the headers a variant file shares with the rest of strata are
// included before its region, so their inline functions and templates (which the linker merges across files) are
// compiled for the baseline in both variants. Everything defined inside a region lives in namespace STRATA_CPU_NS,
// so no symbol is defined differently by the two variants.
//
// Inside a region, test STRATA_CPU_HAS_AVX512 (not __AVX512F__, which `#pragma GCC target` does not define in C++).
#pragma once

#if defined(STRATA_CPU_BUILD_AVX512)
#define STRATA_CPU_NS avx512
#define STRATA_CPU_HAS_AVX512 1
#else
#define STRATA_CPU_NS generic
#define STRATA_CPU_HAS_AVX512 0
#endif
