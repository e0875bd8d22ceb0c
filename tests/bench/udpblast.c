/* udpblast: a paced UDP traffic generator and receiver for the emulator benchmark.
 *
 *   udpblast send DST PORT RATE_BPS IP_SIZE DURATION_S [BATCH] [GSO_SEGS] [NDST]
 *   udpblast recv PORT IDLE_MS MAX_S [BIN_MS]
 *
 * send: IP packets of IP_SIZE bytes (UDP payload IP_SIZE-28) at RATE_BPS (IP bits/s) for DURATION_S,
 *   paced by the clock, up to BATCH packets per sendmmsg() (default 32). Payload starts with a
 *   64-bit sequence number and a 64-bit CLOCK_REALTIME send time (ns). Prints one JSON line.
 *   GSO_SEGS > 1: UDP GSO (UDP_SEGMENT), each message of the batch carrying up to GSO_SEGS packets
 *   that the kernel cuts apart (same packets on the wire; one core offers 10 Gbit/s of 1500-byte
 *   packets this way into the bench's counting sink; the route's device must offer tx
 *   checksumming, and the packets leave with partial checksums).
 *   NDST > 1: the messages go in turn to NDST consecutive IPv4 addresses from DST (a beam's
 *   terminals, one address each); one message's GSO_SEGS packets share its address.
 * recv: counts packets until IDLE_MS without one (after the first) or MAX_S. One-way delay per
 *   packet = kernel receive timestamp (SO_TIMESTAMPNS, CLOCK_REALTIME) - send time, in a 1 us
 *   histogram; also IP bytes per BIN_MS bin (default 100) since the first packet. Prints one JSON
 *   line. Both ends run on the same host clock, so one-way delay is measured directly.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXB 64
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#define MAX_GSO_SEGS 64
#define HIST_US 4000000 /* delays up to 4 s at 1 us resolution */
#define MAXBINS 100000

static int64_t now_ns(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int do_send(int argc, char **argv) {
    if (argc < 7) return 2;
    const char *dst = argv[2];
    int port = atoi(argv[3]);
    double rate = atof(argv[4]);
    int size = atoi(argv[5]);
    double dur = atof(argv[6]);
    int batch = argc > 7 ? atoi(argv[7]) : 32;
    int segs = argc > 8 ? atoi(argv[8]) : 1;
    int ndst = argc > 9 ? atoi(argv[9]) : 1;
    if (ndst < 1 || ndst > 65536) { fprintf(stderr, "bad NDST\n"); return 2; }
    if (batch < 1) batch = 1;
    if (batch > MAXB) batch = MAXB;
    if (size < 44 || size > 65507) { fprintf(stderr, "bad size\n"); return 2; }
    int plen = size - 28;
    if (segs < 1) segs = 1;
    if (segs > MAX_GSO_SEGS) segs = MAX_GSO_SEGS;
    if (segs * plen > 65507 - 8) segs = (65507 - 8) / plen;
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    int buf = 64 << 20;
    setsockopt(s, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof buf);
    if (segs > 1 && setsockopt(s, SOL_UDP, UDP_SEGMENT, &plen, sizeof plen) < 0) {
        perror("UDP_SEGMENT");
        return 1;
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, dst, &a.sin_addr);
    if (ndst == 1 && connect(s, (struct sockaddr *)&a, sizeof a) < 0) { perror("connect"); return 1; }
    uint32_t first = ntohl(a.sin_addr.s_addr), next_dst = 0;
    static struct sockaddr_in dsts[MAXB];
    static char bufs[MAXB][65536];
    struct mmsghdr msgs[MAXB];
    struct iovec iov[MAXB];
    memset(msgs, 0, sizeof msgs);
    memset(bufs, 0, sizeof bufs);
    for (int i = 0; i < MAXB; i++) {
        iov[i].iov_base = bufs[i];
        iov[i].iov_len = plen;
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    double pps = rate / (8.0 * size);
    uint64_t seq = 0, errors = 0;
    double c0 = cpu_s();
    int64_t t0 = now_ns(CLOCK_MONOTONIC), end = t0 + (int64_t)(dur * 1e9);
    for (;;) {
        int64_t t = now_ns(CLOCK_MONOTONIC);
        if (t >= end) break;
        uint64_t due = (uint64_t)((t - t0) * 1e-9 * pps) + 1;
        if (due <= seq) {
            /* Nothing due: sleep (at least ~50 us, so the generator does not spin a core that the
             * system under test needs; packets due meanwhile go out as one sendmmsg batch). */
            int64_t wait = (int64_t)(((double)seq / pps) * 1e9) + t0 - t;
            if (wait < 50000) wait = 50000;
            if (wait > 1000000) wait = 1000000;
            struct timespec ts = {0, wait};
            nanosleep(&ts, NULL);
            continue;
        }
        /* n packets due, in m messages of up to segs packets each (the last may be shorter) */
        int n = (int)(due - seq);
        if (n > batch * segs) n = batch * segs;
        int m = (n + segs - 1) / segs;
        int64_t ts = now_ns(CLOCK_REALTIME);
        for (int i = 0; i < m; i++) {
            int k = i < m - 1 ? segs : n - i * segs;
            iov[i].iov_len = (size_t)k * plen;
            if (ndst > 1) {
                dsts[i] = a;
                dsts[i].sin_addr.s_addr = htonl(first + next_dst);
                next_dst = (next_dst + 1) % (uint32_t)ndst;
                msgs[i].msg_hdr.msg_name = &dsts[i];
                msgs[i].msg_hdr.msg_namelen = sizeof dsts[i];
            }
            for (int j = 0; j < k; j++) {
                uint64_t q = seq + (uint64_t)i * segs + j;
                memcpy(bufs[i] + j * plen, &q, 8);
                memcpy(bufs[i] + j * plen + 8, &ts, 8);
            }
        }
        int r = sendmmsg(s, msgs, m, 0);
        if (r < 0) {
            errors++;
            seq += n; /* count as offered: the kernel refused them */
        } else {
            int ok = r < m ? r * segs : n;
            seq += n;
            if (ok < n) errors += n - ok;
        }
    }
    int64_t t1 = now_ns(CLOCK_MONOTONIC);
    double el = (t1 - t0) / 1e9;
    printf("{\"sent_packets\":%llu,\"sent_bytes\":%llu,\"elapsed_s\":%.6f,\"rate_bps\":%.1f,"
           "\"send_errors\":%llu,\"cpu_s\":%.4f}\n",
           (unsigned long long)seq, (unsigned long long)seq * size, el, seq * size * 8.0 / el,
           (unsigned long long)errors, cpu_s() - c0);
    return 0;
}

static uint32_t hist[HIST_US];
static uint64_t bins[MAXBINS];

static int do_recv(int argc, char **argv) {
    if (argc < 5) return 2;
    int port = atoi(argv[2]);
    int idle_ms = atoi(argv[3]);
    double maxs = atof(argv[4]);
    int bin_ms = argc > 5 ? atoi(argv[5]) : 100;
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    int buf = 256 << 20, one = 1;
    setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf);
    setsockopt(s, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = INADDR_ANY};
    if (bind(s, (struct sockaddr *)&a, sizeof a) < 0) { perror("bind"); return 1; }
    struct timeval tv = {0, 50000};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    printf("ready\n");
    fflush(stdout);
    static char bufs[MAXB][2048];
    static char ctl[MAXB][256];
    struct mmsghdr msgs[MAXB];
    struct iovec iov[MAXB];
    uint64_t pkts = 0, bytes = 0, max_seq = 0, reordered = 0, late = 0;
    int64_t first = 0, last = 0, start = now_ns(CLOCK_MONOTONIC);
    uint64_t last_seq = 0;
    int have_seq = 0;
    int64_t dmin = INT64_MAX, dmax = INT64_MIN;
    double c0 = cpu_s();
    for (;;) {
        for (int i = 0; i < MAXB; i++) {
            iov[i].iov_base = bufs[i];
            iov[i].iov_len = sizeof bufs[i];
            memset(&msgs[i], 0, sizeof msgs[i]);
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
            msgs[i].msg_hdr.msg_control = ctl[i];
            msgs[i].msg_hdr.msg_controllen = sizeof ctl[i];
        }
        int r = recvmmsg(s, msgs, MAXB, MSG_WAITFORONE, NULL);
        int64_t t = now_ns(CLOCK_MONOTONIC);
        if (r <= 0) {
            if (pkts > 0 && (t - last) / 1000000 >= idle_ms) break;
            if ((t - start) / 1e9 >= maxs) break;
            continue;
        }
        if (pkts == 0) first = t;
        last = t;
        for (int i = 0; i < r; i++) {
            unsigned len = msgs[i].msg_len;
            pkts++;
            bytes += len + 28;
            int64_t b = (t - first) / 1000000 / bin_ms;
            if (b >= 0 && b < MAXBINS) bins[b] += len + 28;
            if (len < 16) continue;
            uint64_t q;
            int64_t ts;
            memcpy(&q, bufs[i], 8);
            memcpy(&ts, bufs[i] + 8, 8);
            if (have_seq && q < last_seq) reordered++;
            last_seq = q;
            have_seq = 1;
            if (q > max_seq) max_seq = q;
            int64_t rx = 0;
            for (struct cmsghdr *c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); c; c = CMSG_NXTHDR(&msgs[i].msg_hdr, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
                    struct timespec k;
                    memcpy(&k, CMSG_DATA(c), sizeof k);
                    rx = (int64_t)k.tv_sec * 1000000000LL + k.tv_nsec;
                }
            if (!rx) rx = now_ns(CLOCK_REALTIME);
            int64_t d = rx - ts;
            if (d < dmin) dmin = d;
            if (d > dmax) dmax = d;
            int64_t us = d / 1000;
            if (us >= 0 && us < HIST_US) hist[us]++;
            else late++;
        }
        if ((t - start) / 1e9 >= maxs) break;
    }
    double span = (last - first) / 1e9;
    printf("{\"packets\":%llu,\"bytes\":%llu,\"span_s\":%.6f,\"max_seq\":%llu,\"reordered\":%llu,"
           "\"cpu_s\":%.4f,\"delay_min_ns\":%lld,\"delay_max_ns\":%lld,\"delay_out_of_range\":%llu",
           (unsigned long long)pkts, (unsigned long long)bytes, span, (unsigned long long)max_seq,
           (unsigned long long)reordered, cpu_s() - c0, (long long)(pkts ? dmin : 0),
           (long long)(pkts ? dmax : 0), (unsigned long long)late);
    /* percentiles from the 1 us histogram */
    const double ps[] = {0.5, 0.9, 0.99, 0.999};
    const char *pn[] = {"p50", "p90", "p99", "p999"};
    uint64_t tot = 0;
    for (int i = 0; i < HIST_US; i++) tot += hist[i];
    for (int k = 0; k < 4; k++) {
        uint64_t want = (uint64_t)(ps[k] * tot), acc = 0;
        int i = 0;
        for (; i < HIST_US; i++) { acc += hist[i]; if (acc > want) break; }
        printf(",\"delay_%s_us\":%d", pn[k], tot ? i : -1);
    }
    printf(",\"bin_ms\":%d,\"bins\":[", bin_ms);
    int64_t nb = pkts ? (last - first) / 1000000 / bin_ms + 1 : 0;
    if (nb > MAXBINS) nb = MAXBINS;
    for (int64_t b = 0; b < nb; b++) printf(b ? ",%llu" : "%llu", (unsigned long long)bins[b]);
    printf("]}\n");
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "send")) return do_send(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "recv")) return do_recv(argc, argv);
    fprintf(stderr, "usage: udpblast send DST PORT RATE_BPS IP_SIZE DURATION_S [BATCH] [GSO_SEGS]\n"
                    "       udpblast recv PORT IDLE_MS MAX_S [BIN_MS]\n");
    return 2;
}
