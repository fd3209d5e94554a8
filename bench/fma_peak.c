/* bench/fma_peak.c - the machine's FP32 fused-multiply-add peak, the compute
 * roofline for attention and prefill (bench/long_context.py).
 *
 *   cc -O3 -march=native -fopenmp -o fma_peak bench/fma_peak.c && ./fma_peak [threads]
 *
 * Each thread runs 16 independent chains of vector FMAs (512-bit where the
 * compiler targets AVX-512, else 256-bit) on registers only, enough chains to
 * cover the FMA latency on current x86 cores, for ~0.3 s; best of 5 passes.
 * FLOPs = 2 x lanes x chains x iterations per thread. Prints one JSON object:
 * {"threads":T,"lanes":L,"gflops":G}. Nothing is read from memory, so this is
 * an upper bound no real kernel reaches.
 */
#define _POSIX_C_SOURCE 200809L
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__AVX512F__)
typedef __m512 vec;
#define LANES 16
#define SET1 _mm512_set1_ps
#define FMA _mm512_fmadd_ps
#define ADD _mm512_add_ps
#define SUM _mm512_reduce_add_ps
#else
typedef __m256 vec;
#define LANES 8
#define SET1 _mm256_set1_ps
#define FMA _mm256_fmadd_ps
#define ADD _mm256_add_ps
static float SUM(__m256 v) {
    float f[8];
    _mm256_storeu_ps(f, v);
    return f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7];
}
#endif

#define CHAINS 16 /* the accumulators in run() */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float run(long iters, float seed) {
    /* Sixteen named accumulators (an array would live on the stack). */
    vec c0 = SET1(seed), c1 = SET1(seed + 1), c2 = SET1(seed + 2), c3 = SET1(seed + 3);
    vec c4 = SET1(seed + 4), c5 = SET1(seed + 5), c6 = SET1(seed + 6), c7 = SET1(seed + 7);
    vec c8 = SET1(seed + 8), c9 = SET1(seed + 9), c10 = SET1(seed + 10), c11 = SET1(seed + 11);
    vec c12 = SET1(seed + 12), c13 = SET1(seed + 13), c14 = SET1(seed + 14);
    vec c15 = SET1(seed + 15);
    const vec a = SET1(0.999999f), b = SET1(1e-7f);
    for (long i = 0; i < iters; ++i) {
        c0 = FMA(c0, a, b), c1 = FMA(c1, a, b), c2 = FMA(c2, a, b), c3 = FMA(c3, a, b);
        c4 = FMA(c4, a, b), c5 = FMA(c5, a, b), c6 = FMA(c6, a, b), c7 = FMA(c7, a, b);
        c8 = FMA(c8, a, b), c9 = FMA(c9, a, b), c10 = FMA(c10, a, b), c11 = FMA(c11, a, b);
        c12 = FMA(c12, a, b), c13 = FMA(c13, a, b), c14 = FMA(c14, a, b);
        c15 = FMA(c15, a, b);
        /* Keeps the compiler from folding the loop; the values stay in registers. */
        __asm__ volatile("" : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4), "+v"(c5),
                         "+v"(c6), "+v"(c7));
        __asm__ volatile("" : "+v"(c8), "+v"(c9), "+v"(c10), "+v"(c11), "+v"(c12), "+v"(c13),
                         "+v"(c14), "+v"(c15));
    }
    vec s = ADD(ADD(ADD(c0, c1), ADD(c2, c3)), ADD(ADD(c4, c5), ADD(c6, c7)));
    s = ADD(s, ADD(ADD(ADD(c8, c9), ADD(c10, c11)), ADD(ADD(c12, c13), ADD(c14, c15))));
    return SUM(s);
}

int main(int argc, char** argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    const long iters = 20 * 1000 * 1000;
    double best = 1e30;
    float sink = 0;
    for (int pass = 0; pass < 5; ++pass) {
        double t0 = now_s();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
        sink += run(iters, (float)omp_get_thread_num());
        double t = now_s() - t0;
        if (t < best) best = t;
    }
    double flops = 2.0 * LANES * CHAINS * (double)iters * threads;
    printf("{\"threads\":%d,\"lanes\":%d,\"gflops\":%.1f,\"sink\":%g}\n", threads, LANES,
           flops / best / 1e9, (double)sink);
    return 0;
}
