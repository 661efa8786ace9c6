/* The loopback TCP bound for a 2-rank collective: two processes joined by one TCP connection on
   127.0.0.1, each sending MIB MiB to the other while receiving as many (both directions at
   once, as the two ranks of an AllReduce do). Prints the best of `reps` in GB/s, bytes sent by
   one side per second.

   A 2-rank AllReduce of S bytes sends S and receives S per rank (half in its reduce-scatter,
   half in its all-gather), so over one connection per pair its busbw (= S / t) cannot beat
   this figure, whatever the algorithm.

     tcpbw MIB REPS */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static size_t bytes;
static int reps;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char* what) {
  perror(what);
  exit(1);
}

struct Receiver {
  int fd;
  char* into;
};

static void* receiveAll(void* arg) {
  struct Receiver* r = arg;
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = recv(r->fd, r->into + done, bytes - done, 0);
    if (n <= 0) die("tcpbw: recv");
    done += (size_t)n;
  }
  return NULL;
}

static void sendAll(int fd, const char* from) {
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = send(fd, from + done, bytes - done, 0);
    if (n <= 0) die("tcpbw: send");
    done += (size_t)n;
  }
}

/* One side: `reps` rounds of send-while-receiving; returns the best round's rate. */
static double exchange(int fd) {
  char* out = malloc(bytes);
  char* in = malloc(bytes);
  if (!out || !in) die("tcpbw: malloc");
  memset(out, 1, bytes);
  memset(in, 2, bytes);
  double best = 0;
  for (int r = 0; r < reps; r++) {
    char token = 0;
    /* Start together: a one-byte handshake each way before every round. */
    if (send(fd, &token, 1, 0) != 1 || recv(fd, &token, 1, MSG_WAITALL) != 1) die("tcpbw: sync");
    struct Receiver receiver = {fd, in};
    pthread_t thread;
    const double start = now();
    if (pthread_create(&thread, NULL, receiveAll, &receiver) != 0) die("tcpbw: thread");
    sendAll(fd, out);
    pthread_join(thread, NULL);
    const double rate = (double)bytes / (now() - start) / 1e9;
    if (rate > best) best = rate;
  }
  free(out);
  free(in);
  return best;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: tcpbw MIB REPS\n");
    return 2;
  }
  bytes = (size_t)atoll(argv[1]) << 20;
  reps = atoi(argv[2]);
  if (bytes == 0 || reps < 1) {
    fprintf(stderr, "tcpbw: MIB > 0 and REPS >= 1\n");
    return 2;
  }
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = 0};
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (listener < 0 || bind(listener, (struct sockaddr*)&address, sizeof address) != 0 ||
      listen(listener, 1) != 0 || getsockname(listener, (struct sockaddr*)&address, &length) != 0)
    die("tcpbw: listen on 127.0.0.1");
  const pid_t peer = fork();
  if (peer < 0) die("tcpbw: fork");
  if (peer == 0) {
    close(listener);
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr*)&address, sizeof address) != 0)
      die("tcpbw: connect");
    exchange(fd);
    close(fd);
    _exit(0);
  }
  const int fd = accept(listener, NULL, NULL);
  if (fd < 0) die("tcpbw: accept");
  close(listener);
  const double best = exchange(fd);
  close(fd);
  int status = 0;
  waitpid(peer, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "tcpbw: the peer process failed\n");
    return 1;
  }
  printf("%.2f\n", best);
  return 0;
}
