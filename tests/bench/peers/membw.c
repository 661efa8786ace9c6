/* Memory bandwidth with T threads, each copying its own buffer of the given MiB; STREAM
   counting (memcpy moves 2 x size). Prints the best of `reps` in GB/s. The same probe as
   the memory bound both collectives scripts use (collectives_vs_mpi.sh, collectives_vs_peers.sh).

     membw MIB THREADS REPS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static size_t bytes;
static int reps;
static pthread_barrier_t barrier;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void* worker(void* arg) {
  (void)arg;
  char* src = malloc(bytes);
  char* dst = malloc(bytes);
  memset(src, 1, bytes);
  memset(dst, 2, bytes);
  for (int r = 0; r < reps; r++) {
    pthread_barrier_wait(&barrier);
    memcpy(dst, src, bytes);
    pthread_barrier_wait(&barrier);
  }
  free(src);
  free(dst);
  return NULL;
}

int main(int argc, char** argv) {
  bytes = (size_t)atoll(argv[1]) << 20;
  int threads = atoi(argv[2]);
  reps = atoi(argv[3]);
  pthread_barrier_init(&barrier, NULL, threads + 1);
  pthread_t tid[64];
  for (int t = 0; t < threads; t++) pthread_create(&tid[t], NULL, worker, NULL);
  double best = 0;
  for (int r = 0; r < reps; r++) {
    pthread_barrier_wait(&barrier);
    double start = now();
    pthread_barrier_wait(&barrier);
    double rate = 2.0 * bytes * threads / (now() - start) / 1e9;
    if (rate > best) best = rate;
  }
  for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
  printf("%.2f\n", best);
  return 0;
}
