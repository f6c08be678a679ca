// Measures this CPU's multiply-add peak for each number format the models compute in, so that a
// benchmark's GFLOP/s can be read as a fraction of what the cores can do rather than of a peak
// worked out from a guessed clock and instruction tables.
//
//   cpu_peak [--threads=2] [--seconds=0.3]     (each kernel: three runs of about --seconds)
//
// One line per kind of dot-product instruction this CPU has (and one "skipped" line, with the
// reason, for each it lacks):
//   peak NAME threads=T gmacs=G gflops=2G
// Each kernel keeps enough independent accumulators in registers to hide the instruction's
// latency and reads no memory, so it runs at the issue rate of its multiply units. Every thread
// runs the same kernel at once: T threads measure T cores (or T hyper-threads sharing fewer
// cores, which is then what the benchmarks run on too).
//
// Counted multiply-adds per instruction: float32 FMA 8 (ymm) or 16 (zmm); int8 vpmaddubsw 32 or
// 64 (with the vpmaddwd and add an int32 sum needs, as an AVX2 int8 convolution does); int8
// vpdpbusd 32 or 64; bf16 vdpbf16ps 32 (zmm); AMX tdpbf16ps 16x16x32, tdpbssd 16x16x64.
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

// A kernel runs `iters` iterations of its loop and returns a value made from its accumulators,
// so the compiler cannot drop the work.
using Kernel = double (*)(int64_t iters);

struct PeakKernel {
  const char* name;
  const char* needs;    // the instruction sets, as /proc/cpuinfo spells them
  bool (*available)();  // whether this CPU (and the OS, for AMX) runs it
  Kernel run;
  double macs_per_iter;
};

// Hides a register's value from the optimizer, so no iteration is folded into another.
#define IC_OPAQUE(x) __asm__ volatile("" : "+x"(x))

// The sum of each accumulator's first lane: what a kernel returns, so that its work is used.
__attribute__((target("avx"))) double first_lanes(const __m256* acc, int n) {
  double sum = 0;
  for (int k = 0; k < n; ++k) sum += _mm256_cvtss_f32(acc[k]);
  return sum;
}
__attribute__((target("avx2"))) double first_lanes(const __m256i* acc, int n) {
  double sum = 0;
  for (int k = 0; k < n; ++k) sum += _mm256_extract_epi32(acc[k], 0);
  return sum;
}
__attribute__((target("avx512f"))) double first_lanes(const __m512* acc, int n) {
  double sum = 0;
  float lane[16];
  for (int k = 0; k < n; ++k) {
    _mm512_storeu_ps(lane, acc[k]);
    sum += lane[0];
  }
  return sum;
}
__attribute__((target("avx512f"))) double first_lanes(const __m512i* acc, int n) {
  double sum = 0;
  int32_t lane[16];
  for (int k = 0; k < n; ++k) {
    _mm512_storeu_si512(lane, acc[k]);
    sum += lane[0];
  }
  return sum;
}

// float32 FMA, ymm: 12 chains hide a 4-5 cycle latency at two FMAs a cycle.
__attribute__((target("avx2,fma"))) double f32_fma_avx2(int64_t iters) {
  __m256 acc[12];
  for (int k = 0; k < 12; ++k) acc[k] = _mm256_set1_ps(static_cast<float>(k));
  __m256 x = _mm256_set1_ps(1e-7f), y = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
    for (int k = 0; k < 12; ++k) acc[k] = _mm256_fmadd_ps(x, y, acc[k]);
    IC_OPAQUE(x);
  }
  return first_lanes(acc, 12);
}

__attribute__((target("avx512f"))) double f32_fma_avx512(int64_t iters) {
  __m512 acc[12];
  for (int k = 0; k < 12; ++k) acc[k] = _mm512_set1_ps(static_cast<float>(k));
  __m512 x = _mm512_set1_ps(1e-7f), y = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
    for (int k = 0; k < 12; ++k) acc[k] = _mm512_fmadd_ps(x, y, acc[k]);
    IC_OPAQUE(x);
  }
  return first_lanes(acc, 12);
}

// int8 without VNNI: u8 x s8 pairs summed to s16 (vpmaddubsw), widened to s32 (vpmaddwd by
// ones), added; six chains, so that they and their operands fit in the 16 ymm registers. (512-bit
// constants are set as 32-bit lanes and results read through memory: GCC 12's _mm512_set1_epi8 and
// _mm512_reduce_add_* fail -Werror=uninitialized.) Each chain multiplies its own activations: the
// same operands in every chain would let the compiler multiply once.
__attribute__((target("avx2"))) double int8_avx2(int64_t iters) {
  __m256i acc[6], u[6];
  for (int k = 0; k < 6; ++k) {
    acc[k] = _mm256_setzero_si256();
    u[k] = _mm256_set1_epi8(static_cast<char>(1 + k));
  }
  __m256i w = _mm256_set1_epi8(1);
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t i = 0; i < iters; ++i) {
    for (int k = 0; k < 6; ++k)
      acc[k] = _mm256_add_epi32(acc[k], _mm256_madd_epi16(_mm256_maddubs_epi16(u[k], w), ones));
    IC_OPAQUE(w);
  }
  return first_lanes(acc, 6);
}

__attribute__((target("avx512f,avx512bw"))) double int8_avx512bw(int64_t iters) {
  __m512i acc[8], u[8];
  for (int k = 0; k < 8; ++k) {
    acc[k] = _mm512_setzero_si512();
    u[k] = _mm512_set1_epi32((1 + k) * 0x01010101);
  }
  __m512i w = _mm512_set1_epi32(0x01010101);
  const __m512i ones = _mm512_set1_epi32(0x00010001);
  for (int64_t i = 0; i < iters; ++i) {
    for (int k = 0; k < 8; ++k)
      acc[k] = _mm512_add_epi32(acc[k], _mm512_madd_epi16(_mm512_maddubs_epi16(u[k], w), ones));
    IC_OPAQUE(w);
  }
  return first_lanes(acc, 8);
}

// VNNI: vpdpbusd multiplies u8 x s8 in fours and adds to s32 in one instruction.
__attribute__((target("avx512f,avx512vnni"))) double int8_vnni_avx512(int64_t iters) {
  __m512i acc[12];
  for (int k = 0; k < 12; ++k) acc[k] = _mm512_setzero_si512();
  __m512i u = _mm512_set1_epi32(0x01010101), w = u;
  for (int64_t i = 0; i < iters; ++i) {
    for (int k = 0; k < 12; ++k) acc[k] = _mm512_dpbusd_epi32(acc[k], u, w);
    IC_OPAQUE(u);
  }
  return first_lanes(acc, 12);
}

__attribute__((target("avx2,avxvnni"))) double int8_vnni_avx2(int64_t iters) {
  __m256i acc[12];
  for (int k = 0; k < 12; ++k) acc[k] = _mm256_setzero_si256();
  __m256i u = _mm256_set1_epi8(1), w = _mm256_set1_epi8(1);
  for (int64_t i = 0; i < iters; ++i) {
    for (int k = 0; k < 12; ++k) acc[k] = _mm256_dpbusd_avx_epi32(acc[k], u, w);
    IC_OPAQUE(u);
  }
  return first_lanes(acc, 12);
}

// bf16 pairs multiplied and added into float32 (vdpbf16ps); 0x3c00 is about 0.0078.
__attribute__((target("avx512f,avx512bf16"))) double bf16_avx512(int64_t iters) {
  __m512 acc[12];
  for (int k = 0; k < 12; ++k) acc[k] = _mm512_setzero_ps();
  __m512i a = _mm512_set1_epi32(0x3c003c00), b = a;
  for (int64_t i = 0; i < iters; ++i) {
    for (int k = 0; k < 12; ++k)
      acc[k] =
          _mm512_dpbf16_ps(acc[k], reinterpret_cast<__m512bh>(a), reinterpret_cast<__m512bh>(b));
    IC_OPAQUE(a);
  }
  return first_lanes(acc, 12);
}

// AMX: eight 16-row x 64-byte tiles. Tiles 0-3 accumulate C += A B for the four pairs of the
// two A tiles (4, 5) and the two B tiles (6, 7), as a blocked matrix product does.
struct alignas(64) TileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Linux hands AMX's tile state to a process only when it asks (arch_prctl).
bool amx_permitted() {
  constexpr int kArchReqXcompPerm = 0x1023;
  constexpr int kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

// Per thread, and again after each _tile_release.
__attribute__((target("amx-tile"))) void amx_configure() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = 16;
    config.colsb[t] = 64;
  }
  _tile_loadconfig(&config);
}

alignas(64) uint8_t amx_operand[16 * 64];

template <bool kInt8>
__attribute__((target("amx-tile,amx-bf16,amx-int8"))) double amx(int64_t iters) {
  amx_configure();
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, amx_operand, 64);
  _tile_loadd(5, amx_operand, 64);
  _tile_loadd(6, amx_operand, 64);
  _tile_loadd(7, amx_operand, 64);
  for (int64_t i = 0; i < iters; ++i) {
    if constexpr (kInt8) {
      _tile_dpbssd(0, 4, 6);
      _tile_dpbssd(1, 4, 7);
      _tile_dpbssd(2, 5, 6);
      _tile_dpbssd(3, 5, 7);
    } else {
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  alignas(64) int32_t c[16 * 16];
  _tile_stored(0, c, 64);
  _tile_release();
  double sum = 0;
  for (int32_t v : c) sum += v;
  return sum;
}

// CPUID leaf 7's feature bits, for the features older compilers' __builtin_cpu_supports does not
// name (clang 14: AVX-VNNI and AMX). The OS's part is checked apart: AVX's by the AVX2 kernels
// running at all, AMX's by amx_permitted.
enum Register { kEax, kEbx, kEcx, kEdx };
bool cpuid_leaf7_bit(unsigned subleaf, Register reg, int bit) {
  unsigned r[4] = {};
  if (!__get_cpuid_count(7, subleaf, &r[kEax], &r[kEbx], &r[kEcx], &r[kEdx])) return false;
  return (r[reg] >> bit) & 1u;
}
bool has_avx_vnni() { return cpuid_leaf7_bit(1, kEax, 4); }
bool has_amx_bf16() { return cpuid_leaf7_bit(0, kEdx, 22); }
bool has_amx_tile() { return cpuid_leaf7_bit(0, kEdx, 24); }
bool has_amx_int8() { return cpuid_leaf7_bit(0, kEdx, 25); }

bool can_f32_avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
bool can_f32_avx512() { return __builtin_cpu_supports("avx512f"); }
bool can_int8_avx2() { return __builtin_cpu_supports("avx2"); }
bool can_int8_avx512bw() { return __builtin_cpu_supports("avx512bw"); }
bool can_int8_vnni_avx512() { return __builtin_cpu_supports("avx512vnni"); }
bool can_int8_vnni_avx2() { return __builtin_cpu_supports("avx2") && has_avx_vnni(); }
bool can_bf16_avx512() { return __builtin_cpu_supports("avx512bf16"); }
bool can_amx_bf16() { return has_amx_tile() && has_amx_bf16() && amx_permitted(); }
bool can_amx_int8() { return has_amx_tile() && has_amx_int8() && amx_permitted(); }

const PeakKernel kKernels[] = {
    {"f32_fma_avx2", "avx2 fma", can_f32_avx2, f32_fma_avx2, 12 * 8},
    {"f32_fma_avx512", "avx512f", can_f32_avx512, f32_fma_avx512, 12 * 16},
    {"int8_avx2", "avx2", can_int8_avx2, int8_avx2, 6 * 32},
    {"int8_avx512bw", "avx512bw", can_int8_avx512bw, int8_avx512bw, 8 * 64},
    {"int8_vnni_avx512", "avx512_vnni", can_int8_vnni_avx512, int8_vnni_avx512, 12 * 64},
    {"int8_vnni_avx2", "avx_vnni", can_int8_vnni_avx2, int8_vnni_avx2, 12 * 32},
    {"bf16_avx512", "avx512_bf16", can_bf16_avx512, bf16_avx512, 12 * 32},
    {"bf16_amx", "amx_tile amx_bf16", can_amx_bf16, amx<false>, 4 * 16 * 16 * 32},
    {"int8_amx", "amx_tile amx_int8", can_amx_int8, amx<true>, 4 * 16 * 16 * 64},
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Multiply-adds a second over `threads` threads running `kernel` at once for about `seconds`,
// the best of three such runs.
double measure(const PeakKernel& kernel, int threads, double seconds) {
  // Iterations for about `seconds` on one thread, from a run of a hundredth of that.
  int64_t iters = 1000;
  for (;;) {
    const auto start = std::chrono::steady_clock::now();
    kernel.run(iters);
    const double took = seconds_since(start);
    if (took > seconds / 100) {
      iters = std::max<int64_t>(iters, static_cast<int64_t>(iters * seconds / took));
      break;
    }
    iters *= 4;
  }
  // The best of three team runs: a shared machine's other work only ever slows a run down.
  double best = 0;
  for (int run = 0; run < 3; ++run) {
    std::vector<double> took(static_cast<size_t>(threads));
    std::vector<std::thread> team;
    for (int t = 0; t < threads; ++t) {
      team.emplace_back([&, t] {
        const auto start = std::chrono::steady_clock::now();
        volatile double sink = kernel.run(iters);
        (void)sink;
        took[static_cast<size_t>(t)] = seconds_since(start);
      });
    }
    for (std::thread& thread : team) thread.join();
    const double slowest = *std::max_element(took.begin(), took.end());
    best = std::max(best, static_cast<double>(threads) * static_cast<double>(iters) *
                              kernel.macs_per_iter / slowest);
  }
  return best;
}

bool parse_flag(const char* arg, const char* name, const char** value) {
  const size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) != 0 || arg[n] != '=') return false;
  *value = arg + n + 1;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  double seconds = 0.3;
  for (int i = 1; i < argc; ++i) {
    const char* value = nullptr;
    if (parse_flag(argv[i], "--threads", &value)) {
      threads = std::atoi(value);
    } else if (parse_flag(argv[i], "--seconds", &value)) {
      seconds = std::atof(value);
    } else {
      std::fprintf(stderr,
                   "cpu_peak: unknown argument %s (usage: cpu_peak [--threads=2] "
                   "[--seconds=0.3])\n",
                   argv[i]);
      return 2;
    }
  }
  if (threads < 1 || threads > 1024 || !(seconds > 0 && seconds <= 60)) {
    std::fprintf(stderr, "cpu_peak: --threads must be 1 to 1024 and --seconds above 0, to 60\n");
    return 2;
  }
  for (const PeakKernel& kernel : kKernels) {
    if (!kernel.available()) {
      std::printf("peak %s skipped (this CPU or OS lacks %s)\n", kernel.name, kernel.needs);
      continue;
    }
    const double macs = measure(kernel, threads, seconds);
    std::printf("peak %s threads=%d gmacs=%.1f gflops=%.1f\n", kernel.name, threads, macs / 1e9,
                2 * macs / 1e9);
    std::fflush(stdout);
  }
  return 0;
}
