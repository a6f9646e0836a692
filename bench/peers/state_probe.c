/* SPDX-License-Identifier: BSD-3-Clause */
/* What moving data between two cores costs right now, for
 * scripts/peers_report.sh to print beside each launch.
 *
 * A virtual machine's vCPUs may sit on cores that share an L3 (one CCD of
 * an EPYC) or on cores that do not (two CCDs), and the host may move them
 * while a job runs.  On the Zen 4 guest of 2026-12-06 the second state made
 * a 32 KiB buffer that one core had just written cost 5.3-6.2 us to copy on
 * the other, against 1.35 us in the first, and every library's collectives
 * with it (docs/PERFORMANCE.md, "What the guest's slow state is").  A peer
 * report whose launches fall in different states compares states, not
 * libraries; this probe says which state each launch met.
 *
 * Two threads, pinned to the first two CPUs this process may use:
 *   rt_us       a flag's round trip (median of 9 batches of 2000)
 *   dirty32k_us thread A writes 32 KiB, thread B copies it out after the
 *               flag, B answers (median of 9 batches of 200)
 * Output: one line "# probe cpus=A,B rt_us=X dirty32k_us=Y", or
 * "# probe cpus=1" where fewer than two CPUs are allowed. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BYTES   (32u << 10)
#define BATCHES 9

static _Atomic unsigned long ping __attribute__((aligned(128)));
static _Atomic unsigned long pong __attribute__((aligned(128)));
static _Atomic int ready;   /* the answering thread runs on its CPU */
static unsigned char *shared, *mine, *theirs;
static int cpu[2], copy_data;
static unsigned long rounds;

/* Spin as the libraries do (a PAUSE per poll: under a hypervisor it also
 * lets the host run the other vCPU). */
static void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void pin(int c)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(c, &s);
    pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

static void *answer(void *arg)
{
    (void)arg;
    pin(cpu[1]);
    atomic_store(&ready, 1);
    for (unsigned long i = 1; i <= rounds; i++) {
        while (atomic_load_explicit(&ping, memory_order_acquire) < i) relax();
        if (copy_data) memcpy(theirs, shared, BYTES);
        atomic_store_explicit(&pong, i, memory_order_release);
    }
    return NULL;
}

/* Microseconds per round of one batch. */
static double batch(int data, unsigned long n)
{
    pthread_t t;
    atomic_store(&ping, 0);
    atomic_store(&pong, 0);
    atomic_store(&ready, 0);
    copy_data = data;
    rounds = n;
    pthread_create(&t, NULL, answer, NULL);
    pin(cpu[0]);
    while (!atomic_load(&ready)) relax();   /* its start takes milliseconds: not timed */
    double t0 = now();
    for (unsigned long i = 1; i <= n; i++) {
        if (data) memcpy(shared, mine, BYTES);
        atomic_store_explicit(&ping, i, memory_order_release);
        while (atomic_load_explicit(&pong, memory_order_acquire) < i) relax();
    }
    double us = (now() - t0) / (double)n * 1e6;
    pthread_join(t, NULL);
    return us;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(int data, unsigned long n)
{
    double v[BATCHES];
    for (int b = 0; b < BATCHES; b++) v[b] = batch(data, n);
    qsort(v, BATCHES, sizeof(v[0]), by_value);
    return v[BATCHES / 2];
}

int main(void)
{
    cpu_set_t allowed;
    int found = 0;
    if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
        for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
            if (CPU_ISSET(c, &allowed)) cpu[found++] = c;
    if (found < 2) {
        printf("# probe cpus=1\n");
        return 0;
    }
    shared = aligned_alloc(4096, BYTES);
    mine = aligned_alloc(4096, BYTES);
    theirs = aligned_alloc(4096, BYTES);
    if (!shared || !mine || !theirs) return 1;
    memset(shared, 1, BYTES);
    memset(mine, 2, BYTES);
    memset(theirs, 3, BYTES);
    double rt = median_of(0, 2000), dirty = median_of(1, 200);
    printf("# probe cpus=%d,%d rt_us=%.3f dirty32k_us=%.2f\n", cpu[0], cpu[1], rt, dirty);
    return 0;
}
