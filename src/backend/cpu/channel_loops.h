// Markings for the loops over an NHWC pixel's channels that GCC and clang vectorize: the
// Winograd transforms (winograd_conv.cc, winograd_toom_cook_conv.cc).
#pragma once

// Cloned by instruction set as vector_loops.cc's loops are (the project builds for any x86-64);
// the clone for this CPU is picked when the program loads.
#if defined(__x86_64__)
#define IC_CHANNEL_LOOP __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define IC_CHANNEL_LOOP
#endif

// Tells the vectorizer that a loop's iterations are independent (GCC's and clang's spelling).
#if defined(__clang__)
#define IC_INDEPENDENT_ITERATIONS _Pragma("clang loop vectorize(assume_safety)")
#else
#define IC_INDEPENDENT_ITERATIONS _Pragma("GCC ivdep")
#endif
