/* bench/membw.c - native memory read bandwidth probe for Brisk benchmarks.
 *
 * Decode is memory-bandwidth bound, so the roofline for tokens/s is
 * (read GB/s) / (bytes of weights + KV read per token). This program measures
 * the read bandwidth that a streaming kernel can get from DRAM.
 *
 * Build and run through bench/membw.sh, or by hand:
 *   cc -O3 -march=native -fopenmp -o membw bench/membw.c && ./membw [MiB] [reps] [max_threads]
 * Defaults: 1024 MiB array, best of 5 passes, threads 1..2 (each count measured).
 *
 * Method: a uint64 array of SIZE bytes is first-touched by the same threads
 * (static schedule) that later read it. Each pass sums every element (integer
 * adds, auto-vectorised to 512-bit loads with -march=native on AVX-512 parts),
 * so exactly SIZE bytes are read per pass; the sum is printed so the loop cannot
 * be removed. GB/s = SIZE / best pass time / 1e9 (decimal GB).
 * Also reports a write (fill) pass and an in-cache (256 KiB per thread) read
 * pass for context. Output: one JSON object on stdout.
 */
#define _POSIX_C_SOURCE 200809L
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Sum n uint64 with 8 independent accumulators (one 512-bit vector each). */
static uint64_t sum_range(const uint64_t *restrict a, size_t n) {
    uint64_t s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        for (int k = 0; k < 8; ++k) s[k] += a[i + k];
    }
    for (; i < n; ++i) s[0] += a[i];
    uint64_t t = 0;
    for (int k = 0; k < 8; ++k) t += s[k];
    return t;
}

static double read_pass(const uint64_t *a, size_t n, int threads, uint64_t *sink) {
    uint64_t total = 0;
    double t0 = now_s();
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
        int tid = omp_get_thread_num();
        int nt = omp_get_num_threads();
        size_t chunk = (n + (size_t)nt - 1) / (size_t)nt;
        size_t lo = (size_t)tid * chunk;
        size_t hi = lo + chunk < n ? lo + chunk : n;
        if (lo < hi) total += sum_range(a + lo, hi - lo);
    }
    double t = now_s() - t0;
    *sink += total;
    return t;
}

static double write_pass(uint64_t *a, size_t n, int threads, uint64_t v) {
    double t0 = now_s();
#pragma omp parallel num_threads(threads)
    {
        int tid = omp_get_thread_num();
        int nt = omp_get_num_threads();
        size_t chunk = (n + (size_t)nt - 1) / (size_t)nt;
        size_t lo = (size_t)tid * chunk;
        size_t hi = lo + chunk < n ? lo + chunk : n;
        for (size_t i = lo; i < hi; ++i) a[i] = v + i;
    }
    return now_s() - t0;
}

int main(int argc, char **argv) {
    size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 1024;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    int max_threads = argc > 3 ? atoi(argv[3]) : 2;
    if (mib == 0 || reps <= 0 || max_threads <= 0) {
        fprintf(stderr, "usage: %s [MiB=1024] [reps=5] [max_threads=2]\n", argv[0]);
        return 2;
    }
    size_t bytes = mib << 20;
    size_t n = bytes / sizeof(uint64_t);
    uint64_t *a = NULL;
    if (posix_memalign((void **)&a, 2 << 20, bytes) != 0) {
        fprintf(stderr, "allocation of %zu bytes failed\n", bytes);
        return 1;
    }
    /* first touch with the largest thread count, static halves */
    write_pass(a, n, max_threads, 1);

    uint64_t sink = 0;
    printf("{\"array_bytes\":%zu,\"reps\":%d,\"unit\":\"GB/s (1e9 bytes/s)\",\"results\":[", bytes, reps);
    for (int th = 1; th <= max_threads; ++th) {
        double best_r = 1e30, best_w = 1e30, best_c = 1e30;
        read_pass(a, n, th, &sink); /* warm-up */
        for (int r = 0; r < reps; ++r) {
            double t = read_pass(a, n, th, &sink);
            if (t < best_r) best_r = t;
        }
        for (int r = 0; r < reps; ++r) {
            double t = write_pass(a, n, th, (uint64_t)r);
            if (t < best_w) best_w = t;
        }
        /* in-cache read: 256 KiB per thread, repeated to make the timing long enough */
        size_t cn = (size_t)th * (256u << 10) / sizeof(uint64_t);
        int inner = 2000;
        for (int r = 0; r < reps; ++r) {
            uint64_t total = 0;
            double t0 = now_s();
#pragma omp parallel num_threads(th) reduction(+ : total)
            {
                size_t per = cn / (size_t)omp_get_num_threads();
                const uint64_t *mine = a + (size_t)omp_get_thread_num() * per;
                for (int k = 0; k < inner; ++k) {
                    total += sum_range(mine, per);
                    __asm__ volatile("" ::: "memory"); /* keep every pass */
                }
            }
            double t = (now_s() - t0) / inner;
            sink += total;
            if (t < best_c) best_c = t;
        }
        printf("%s{\"threads\":%d,\"read_gbps\":%.2f,\"write_gbps\":%.2f,\"l2_read_gbps\":%.2f}",
               th > 1 ? "," : "", th, (double)bytes / best_r / 1e9, (double)bytes / best_w / 1e9,
               (double)(cn * sizeof(uint64_t)) / best_c / 1e9);
    }
    printf("],\"checksum\":%llu}\n", (unsigned long long)(sink % 1000003u));
    free(a);
    return 0;
}
