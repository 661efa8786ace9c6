/* Memory bandwidth with T threads, each copying its own buffer of the given MiB; STREAM
   counting (memcpy moves 2 x size). Prints the best of `reps` in GB/s. The same probe as
   the memory bound both collectives scripts use (collectives_vs_mpi.sh, collectives_vs_peers.sh).

   Each worker times its own copy and a round lasts from the first start to the last end: with
   more threads than CPUs, a coordinating thread's clock would start late whenever it is
   scheduled after the workers, and the best round would then overstate the bandwidth.

     membw MIB THREADS REPS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 64

static size_t bytes;
static int reps;
static pthread_barrier_t barrier;
static double started[MAX_THREADS];
static double finished[MAX_THREADS];

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void* worker(void* arg) {
  const int self = (int)(long)arg;
  char* src = malloc(bytes);
  char* dst = malloc(bytes);
  memset(src, 1, bytes);
  memset(dst, 2, bytes);
  for (int r = 0; r < reps; r++) {
    pthread_barrier_wait(&barrier); /* round starts */
    started[self] = now();
    memcpy(dst, src, bytes);
    finished[self] = now();
    pthread_barrier_wait(&barrier); /* round ends: the main thread reads the times */
  }
  free(src);
  free(dst);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: membw MIB THREADS REPS\n");
    return 2;
  }
  bytes = (size_t)atoll(argv[1]) << 20;
  const int threads = atoi(argv[2]);
  reps = atoi(argv[3]);
  if (bytes == 0 || threads < 1 || threads > MAX_THREADS || reps < 1) {
    fprintf(stderr, "membw: MIB > 0, 1 <= THREADS <= %d and REPS >= 1\n", MAX_THREADS);
    return 2;
  }
  pthread_barrier_init(&barrier, NULL, threads + 1);
  pthread_t tid[MAX_THREADS];
  for (int t = 0; t < threads; t++) pthread_create(&tid[t], NULL, worker, (void*)(long)t);
  double best = 0;
  for (int r = 0; r < reps; r++) {
    pthread_barrier_wait(&barrier);
    pthread_barrier_wait(&barrier);
    double first = started[0], last = finished[0];
    for (int t = 1; t < threads; t++) {
      if (started[t] < first) first = started[t];
      if (finished[t] > last) last = finished[t];
    }
    const double rate = 2.0 * (double)bytes * threads / (last - first) / 1e9;
    if (rate > best) best = rate;
  }
  for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
  printf("%.2f\n", best);
  return 0;
}
