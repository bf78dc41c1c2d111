// Closes a region of variant code opened by isa_begin.h. No include guard: included once per region.
#if defined(STRATA_CPU_BUILD_AVX512)
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif
