/* One MPI collective (float32 sum), timed like nccl-tests; rank 0 prints one JSON line.

     mpiexec -n RANKS mpi_bench OP BYTES ITERS WARMUP

   OP is allreduce, allgather or reducescatter (MPI_Reduce_scatter_block); BYTES is nccl-tests'
   S (the per-rank buffer for AllReduce, the total of all ranks' blocks for AllGather and
   ReduceScatter). Built once per MPI (Open MPI's and MPICH's mpicc): the transport is the
   launcher's business. Time is the mean over ITERS iterations and over ranks; every rank checks
   its whole result after the timed loop. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 5) {
    if (rank == 0) fprintf(stderr, "usage: mpi_bench allreduce|allgather|reducescatter BYTES ITERS WARMUP\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const char* op = argv[1];
  long long bytes = atoll(argv[2]);
  int iters = atoi(argv[3]), warmup = atoi(argv[4]);
  int allreduce = !strcmp(op, "allreduce"), allgather = !strcmp(op, "allgather");
  /* AllGather and ReduceScatter need one float per rank at least. */
  if ((!allreduce && !allgather && strcmp(op, "reducescatter")) || iters < 1 || warmup < 0 ||
      bytes < (allreduce ? 4LL : 4LL * size)) {
    if (rank == 0) fprintf(stderr, "mpi_bench: bad arguments\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  long long count, in_count, out_count;
  double factor, s;
  if (allreduce) {
    count = in_count = out_count = bytes / 4;
    factor = 2.0 * (size - 1) / size;
    s = count * 4.0;
  } else if (allgather) {
    count = bytes / 4 / size;
    in_count = count;
    out_count = count * size;
    factor = (double)(size - 1) / size;
    s = out_count * 4.0;
  } else {
    count = bytes / 4 / size;
    in_count = count * size;
    out_count = count;
    factor = (double)(size - 1) / size;
    s = in_count * 4.0;
  }
  float* in = malloc((size_t)(in_count + 1) * 4);
  float* out = malloc((size_t)(out_count + 1) * 4);
  for (long long i = 0; i < in_count; i++) in[i] = (float)(rank + 1);
  memset(out, 0, (size_t)(out_count + 1) * 4);
  double start = 0;
  for (int it = 0; it < warmup + iters; it++) {
    if (it == warmup) {
      MPI_Barrier(MPI_COMM_WORLD);
      start = MPI_Wtime();
    }
    if (allreduce)
      MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else if (allgather)
      MPI_Allgather(in, (int)count, MPI_FLOAT, out, (int)count, MPI_FLOAT, MPI_COMM_WORLD);
    else
      MPI_Reduce_scatter_block(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
  double local = (MPI_Wtime() - start) / iters * 1e6, sum = 0;
  /* AllGather: block r holds r + 1; the reductions sum 1..size everywhere. */
  int ok = 1, all_ok = 0;
  for (long long i = 0; i < out_count && ok; i++) {
    float want = allgather ? (float)(i / count + 1) : (float)size * (size + 1) / 2;
    ok = out[i] == want;
  }
  MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  double t = sum / size;
  if (rank == 0) {
    printf("{\"op\":\"%s\",\"ranks\":%d,\"bytes\":%.0f,\"time_us\":%.3f,\"algbw_GBps\":%.4f,"
           "\"busbw_GBps\":%.4f,\"check\":\"%s\"}\n",
           op, size, s, t, s / t / 1e3, s / t / 1e3 * factor, all_ok ? "ok" : "fail");
    fflush(stdout);
  }
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
