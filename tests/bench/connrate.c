/* connrate: TCP connection set-up rate, for the PEP benchmark.
 *
 *   connrate serve PORT                       accept; write 1 byte; close (4 threads)
 *   connrate connect HOST PORT THREADS SECONDS
 *
 * connect: THREADS threads each loop connect -> read to EOF -> close until SECONDS pass; prints
 *   one JSON line {"connections": N, "failed": F, "seconds": S, "per_s": N/S}. A connection counts
 *   when its byte arrived and the EOF after it: a proxy must have set up both of its legs.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_in dst;
static double deadline;
static atomic_long ok, failed;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *serve_loop(void *arg) {
    int ls = *(int *)arg;
    for (;;) {
        int c = accept(ls, NULL, NULL);
        if (c < 0) continue;
        (void)!write(c, "x", 1);
        close(c);
    }
    return NULL;
}

static void *connect_loop(void *arg) {
    (void)arg;
    char buf[16];
    while (now() < deadline) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        if (s < 0 || connect(s, (struct sockaddr *)&dst, sizeof dst) < 0) {
            atomic_fetch_add(&failed, 1);
            if (s >= 0) close(s);
            continue;
        }
        ssize_t n, got = 0;
        while ((n = read(s, buf, sizeof buf)) > 0) got += n;
        atomic_fetch_add(n == 0 && got == 1 ? &ok : &failed, 1);
        close(s);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "serve")) {
        int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
        setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
        if (bind(ls, (struct sockaddr *)&a, sizeof a) < 0 || listen(ls, 4096) < 0) {
            perror("connrate serve");
            return 1;
        }
        printf("{\"listening\": %s}\n", argv[2]);
        fflush(stdout);
        pthread_t t[4];
        for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, serve_loop, &ls);
        pthread_join(t[0], NULL);
        return 0;
    }
    if (argc == 6 && !strcmp(argv[1], "connect")) {
        dst.sin_family = AF_INET;
        dst.sin_port = htons(atoi(argv[3]));
        inet_pton(AF_INET, argv[2], &dst.sin_addr);
        int threads = atoi(argv[4]);
        double seconds = atof(argv[5]), t0 = now();
        deadline = t0 + seconds;
        pthread_t t[256];
        for (int i = 0; i < threads && i < 256; i++) pthread_create(&t[i], NULL, connect_loop, NULL);
        for (int i = 0; i < threads && i < 256; i++) pthread_join(t[i], NULL);
        double dt = now() - t0;
        printf("{\"connections\": %ld, \"failed\": %ld, \"seconds\": %.3f, \"per_s\": %.1f}\n",
               (long)ok, (long)failed, dt, ok / dt);
        return 0;
    }
    fprintf(stderr, "usage: connrate serve PORT | connrate connect HOST PORT THREADS SECONDS\n");
    return 2;
}
