/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What every SatLab congestion-control program (bpf/<scheme>.bpf.c, struct_ops
 * tcp_congestion_ops) needs from the kernel's TCP: the socket casts and the window
 * arithmetic of include/net/tcp.h and net/ipv4/tcp_cong.c (Linux 6.x), restated
 * statement for statement so a scheme built on them grows its window exactly as the
 * kernel's Reno does.
 *
 * Restated rather than called as kfuncs (tcp_slow_start, tcp_cong_avoid_ai and
 * tcp_reno_* are exported to BPF since Linux 5.13): the arithmetic every scheme
 * inherits stays in view, runs the same on every kernel that has struct_ops, and a
 * scheme may change one step of it. The names carry an sl_ prefix because newer
 * bpftool versions put prototypes of the kfuncs into vmlinux.h.
 *
 * Modelled on the kernel selftests' progs/bpf_tracing_net.h.
 */
#ifndef SATLAB_TCP_CA_HELPERS_H
#define SATLAB_TCP_CA_HELPERS_H

#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

/* include/net/tcp.h; not in vmlinux.h, which carries types only. */
#define TCP_INFINITE_SSTHRESH	0x7fffffff

#define sl_min(a, b)	((a) < (b) ? (a) : (b))
#define sl_max(a, b)	((a) > (b) ? (a) : (b))

static __always_inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

/* The scheme's private per-connection state (ICSK_CA_PRIV_SIZE bytes, 104 on 6.x). */
static __always_inline void *inet_csk_ca(const struct sock *sk)
{
	return (void *)inet_csk(sk)->icsk_ca_priv;
}

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline bool sl_tcp_in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

/*
 * tcp_is_cwnd_limited(): grow the window only while the sender uses it, so an
 * application-limited flow does not build a window it never tested. Current kernels
 * test is_cwnd_limited first (older ones, and older selftests, tested slow start first).
 */
static __always_inline bool sl_tcp_is_cwnd_limited(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if (BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited))
		return true;

	/* In slow start, ensure cwnd grows to twice what was ACKed. */
	if (sl_tcp_in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;

	return false;
}

/*
 * tcp_slow_start() (RFC 5681 section 3.1 with RFC 3465 byte counting in packets):
 * cwnd grows by the number of packets ACKed, up to ssthresh. Returns the ACKed
 * packets left over once cwnd reached ssthresh, for congestion avoidance to use.
 */
static __always_inline __u32 sl_tcp_slow_start(struct tcp_sock *tp, __u32 acked)
{
	__u32 cwnd = sl_min(tp->snd_cwnd + acked, tp->snd_ssthresh);

	acked -= cwnd - tp->snd_cwnd;
	tp->snd_cwnd = sl_min(cwnd, tp->snd_cwnd_clamp);

	return acked;
}

/*
 * tcp_cong_avoid_ai(): additive increase, one packet per w packets ACKed
 * (RFC 5681 section 3.1, equation 3, counted exactly with the snd_cwnd_cnt credit).
 */
static __always_inline void sl_tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked)
{
	/* If credits accumulated at a higher w, apply them gently now. */
	if (tp->snd_cwnd_cnt >= w) {
		tp->snd_cwnd_cnt = 0;
		tp->snd_cwnd = tp->snd_cwnd + 1;
	}

	tp->snd_cwnd_cnt += acked;
	if (tp->snd_cwnd_cnt >= w) {
		__u32 delta = tp->snd_cwnd_cnt / w;

		tp->snd_cwnd_cnt -= delta * w;
		tp->snd_cwnd = tp->snd_cwnd + delta;
	}
	tp->snd_cwnd = sl_min(tp->snd_cwnd, tp->snd_cwnd_clamp);
}

/*
 * tcp_reno_cong_avoid(): slow start below ssthresh, additive increase above it, while the
 * sender uses its window. The window growth every SatLab scheme shares.
 */
static __always_inline void sl_tcp_reno_cong_avoid(struct sock *sk, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!sl_tcp_is_cwnd_limited(sk))
		return;

	/* In "safe" area, increase. */
	if (sl_tcp_in_slow_start(tp)) {
		acked = sl_tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	/* In dangerous area, increase slowly. */
	sl_tcp_cong_avoid_ai(tp, tp->snd_cwnd, acked);
}

/*
 * tcp_reno_undo_cwnd(): after a reduction the kernel found spurious, restore the window
 * it had before (prior_cwnd, saved by the kernel when it entered recovery or loss).
 */
static __always_inline __u32 sl_tcp_reno_undo_cwnd(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	return sl_max(tp->snd_cwnd, tp->prior_cwnd);
}

#endif /* SATLAB_TCP_CA_HELPERS_H */
