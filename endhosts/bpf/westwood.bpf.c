// SPDX-License-Identifier: GPL-2.0-only
/*
 * sl_westwood: TCP Westwood+, the end-to-end bandwidth-estimation scheme the ETEN report
 * compares BETEN with (BBN TR 8333, Krishnan, Allman, Partridge, Sterbenz, 2002: sims 5/6,
 * Figs 9/10; "Explicit Transport Error Notification (ETEN) for Error-Prone Wireless and Satellite Networks", BBN TR 8333).
 *
 *   S. Mascolo, C. Casetti, M. Gerla, M. Y. Sanadidi, R. Wang, "TCP Westwood: Bandwidth
 *   estimation for enhanced transport over wireless links", ACM MobiCom 2001;
 *   L. A. Grieco, S. Mascolo, "Performance evaluation and comparison of Westwood+, New
 *   Reno, and Vegas TCP congestion control", ACM CCR 34(2), 2004 (Westwood+: one
 *   bandwidth sample per RTT, low-pass filtered).
 *
 * The sender counts the bytes ACKed in every window of one RTT (at least 50 ms), divides
 * by the window's length, and low-pass filters the samples twice (gain 1/8 each) into a
 * bandwidth estimate bw_est. After a loss it sets the window to what the path carried:
 *
 *   ssthresh = max(bw_est * rtt_min / mss, 2)
 *     - at the end of fast recovery (CA_EVENT_COMPLETE_CWR), and cwnd = ssthresh;
 *     - on a retransmission timeout (CA_EVENT_LOSS); cwnd restarts from 1 as in Reno, and
 *       rtt_min restarts from the next RTT sample.
 *
 * A random (non-congestion) loss on a path with little queue therefore costs less than
 * Reno's halving; a loss with a standing queue costs more (rtt_min excludes the queue).
 *
 * This file is the kernel's net/ipv4/tcp_westwood.c (Linux 6.x) restated statement for
 * statement; every place where it departs from that file says so, and why ("Kernel:").
 * Between the two events the kernel module uses tcp_reno_ssthresh (so recovery first
 * halves the window, as Reno) and tcp_reno_cong_avoid / tcp_reno_undo_cwnd; here those
 * are sl_newreno's, on tcp_ca_helpers.h, so window growth is exactly sl_newreno's and a
 * comparison isolates the loss response.
 *
 * Units are the kernel's: time in jiffies (HZ from the running kernel's configuration),
 * bandwidth in bytes per jiffy, windows in packets of mss_cache bytes.
 */

#define RENO_SSTHRESH
#define RENO_CONG_AVOID
#define RENO_UNDO_CWND
#include "reno_steps.h"

char _license[] SEC("license") = "GPL";

/*
 * Kernel: HZ is a compile-time constant and tcp_jiffies32 reads jiffies. A BPF program is
 * built once for every kernel, so HZ comes from the running kernel's configuration
 * (libbpf resolves __kconfig at load time, from /proc/config.gz or /boot/config-*) and
 * jiffies from the bpf_jiffies64() helper, as the kernel selftests' bpf_cubic.c does.
 */
extern unsigned long CONFIG_HZ __kconfig;
#define HZ		CONFIG_HZ
#define USEC_PER_SEC	1000000ULL
#define tcp_jiffies32	((__u32)bpf_jiffies64())

/* TCP Westwood functions and constants (the kernel's) */
#define TCP_WESTWOOD_RTT_MIN	(HZ / 20)	/* 50ms */
#define TCP_WESTWOOD_INIT_RTT	(20 * HZ)	/* maybe too conservative?! */

/* struct westwood of the kernel, 38 bytes of the 104 in icsk_ca_priv */
struct westwood {
	__u32 bw_ns_est;	/* first bandwidth estimation..not too smoothed */
	__u32 bw_est;		/* bandwidth estimate, bytes per jiffy */
	__u32 rtt_win_sx;	/* here starts a new evaluation... (jiffies) */
	__u32 bk;		/* bytes ACKed in the current window */
	__u32 snd_una;		/* used for evaluating the number of acked bytes */
	__u32 cumul_ack;
	__u32 accounted;	/* bytes credited to duplicate ACKs, not yet cumulatively ACKed */
	__u32 rtt;		/* last RTT sample, jiffies */
	__u32 rtt_min;		/* minimum observed RTT, jiffies */
	__u8 first_ack;		/* flag which infers that this is the first ack */
	__u8 reset_rtt_min;	/* Reset RTT min to next RTT sample */
};

/*
 * usecs_to_jiffies() (include/linux/jiffies.h), rounding up. Kernel: for an HZ that
 * divides 10^6 (100, 250, 1000) this is exactly _usecs_to_jiffies(); for HZ=300 the
 * kernel multiplies and shifts, which also rounds up and agrees to within a jiffy.
 * MAX_JIFFY_OFFSET clamping is not needed: rtt_us is at most 2^31 us.
 */
static __always_inline __u32 sl_usecs_to_jiffies(__u32 u)
{
	return ((__u64)u * HZ + USEC_PER_SEC - 1) / USEC_PER_SEC;
}

/*
 * tcp_westwood_init(): called when the connection is established, so the sequence
 * numbers are correct; there is no RTT yet, so rtt and rtt_min start at 20 s, certain
 * to be replaced within the first RTT.
 */
SEC("struct_ops/westwood_init")
void BPF_PROG(westwood_init, struct sock *sk)
{
	struct westwood *w = inet_csk_ca(sk);

	w->bk = 0;
	w->bw_ns_est = 0;
	w->bw_est = 0;
	w->accounted = 0;
	w->cumul_ack = 0;
	w->reset_rtt_min = 1;
	w->rtt_min = w->rtt = TCP_WESTWOOD_INIT_RTT;
	w->rtt_win_sx = tcp_jiffies32;
	w->snd_una = tcp_sk(sk)->snd_una;
	w->first_ack = 1;
}

/* westwood_do_filter(): low-pass filter with constant coefficients, 7/8 old + 1/8 new. */
static __always_inline __u32 westwood_do_filter(__u32 a, __u32 b)
{
	return ((7 * a) + b) >> 3;
}

static __always_inline void westwood_filter(struct westwood *w, __u32 delta)
{
	/* If the filter is empty fill it with the first sample of bandwidth */
	if (w->bw_ns_est == 0 && w->bw_est == 0) {
		w->bw_ns_est = w->bk / delta;
		w->bw_est = w->bw_ns_est;
	} else {
		w->bw_ns_est = westwood_do_filter(w->bw_ns_est, w->bk / delta);
		w->bw_est = westwood_do_filter(w->bw_est, w->bw_ns_est);
	}
}

/* tcp_westwood_pkts_acked(): all Westwood+ needs is the last RTT sample. */
SEC("struct_ops/westwood_pkts_acked")
void BPF_PROG(westwood_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct westwood *w = inet_csk_ca(sk);

	if (sample->rtt_us > 0)
		w->rtt = sl_usecs_to_jiffies(sample->rtt_us);
}

/*
 * westwood_update_window(): when an RTT window (at least 50 ms) has passed, filter the
 * bytes ACKed in it into the estimate and start the next window. Below 50 ms the sample
 * keeps building: on a LAN every window is 50 ms.
 */
static __always_inline void westwood_update_window(struct sock *sk)
{
	struct westwood *w = inet_csk_ca(sk);
	__s32 delta = tcp_jiffies32 - w->rtt_win_sx;

	/*
	 * Initialize w->snd_una with the first acked sequence number in order to fix
	 * mismatch between tp->snd_una and w->snd_una for the first bandwidth sample
	 */
	if (w->first_ack) {
		w->snd_una = tcp_sk(sk)->snd_una;
		w->first_ack = 0;
	}

	/*
	 * Kernel: compares s32 delta with max_t(u32, ...), i.e. as u32; the cast says so
	 * (the build has -Wsign-compare -Werror).
	 */
	if (w->rtt && (__u32)delta > sl_max(w->rtt, (__u32)TCP_WESTWOOD_RTT_MIN)) {
		westwood_filter(w, delta);

		w->bk = 0;
		w->rtt_win_sx = tcp_jiffies32;
	}
}

static __always_inline void update_rtt_min(struct westwood *w)
{
	if (w->reset_rtt_min) {
		w->rtt_min = w->rtt;
		w->reset_rtt_min = 0;
	} else {
		w->rtt_min = sl_min(w->rtt, w->rtt_min);
	}
}

/* westwood_fast_bw(): an in-order ACK that only advanced snd_una; count what it ACKed. */
static __always_inline void westwood_fast_bw(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct westwood *w = inet_csk_ca(sk);

	westwood_update_window(sk);

	w->bk += tp->snd_una - w->snd_una;
	w->snd_una = tp->snd_una;
	update_rtt_min(w);
}

/*
 * westwood_acked_count(): the bytes a slow-path ACK stands for. A duplicate ACK counts
 * one segment delivered (and is remembered in accounted); a cumulative ACK after
 * duplicates then counts only what the duplicates did not already count.
 */
static __always_inline __u32 westwood_acked_count(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct westwood *w = inet_csk_ca(sk);

	w->cumul_ack = tp->snd_una - w->snd_una;

	/* If cumul_ack is 0 this is a dupack since it's not moving tp->snd_una. */
	if (!w->cumul_ack) {
		w->accounted += tp->mss_cache;
		w->cumul_ack = tp->mss_cache;
	}

	if (w->cumul_ack > tp->mss_cache) {
		/* Partial or delayed ack */
		if (w->accounted >= w->cumul_ack) {
			w->accounted -= w->cumul_ack;
			w->cumul_ack = tp->mss_cache;
		} else {
			w->cumul_ack -= w->accounted;
			w->accounted = 0;
		}
	}

	w->snd_una = tp->snd_una;

	return w->cumul_ack;
}

/*
 * tcp_westwood_bw_rttmin(): the window the path carried, bw_est * rtt_min, in packets;
 * never below 2. Kernel: the product is u32, as in the kernel (bytes per jiffy times
 * jiffies: it overflows only past 4 GB per min-RTT window).
 */
static __always_inline __u32 westwood_bw_rttmin(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	const struct westwood *w = inet_csk_ca(sk);

	return sl_max((w->bw_est * w->rtt_min) / tp->mss_cache, 2U);
}

/* tcp_westwood_ack(): every ACK feeds the estimate. */
SEC("struct_ops/westwood_in_ack_event")
void BPF_PROG(westwood_in_ack_event, struct sock *sk, __u32 ack_flags)
{
	if (ack_flags & CA_ACK_SLOWPATH) {
		struct westwood *w = inet_csk_ca(sk);

		westwood_update_window(sk);
		w->bk += westwood_acked_count(sk);

		update_rtt_min(w);
		return;
	}

	westwood_fast_bw(sk);
}

/* tcp_westwood_event(): the loss response. */
SEC("struct_ops/westwood_cwnd_event")
void BPF_PROG(westwood_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct westwood *w = inet_csk_ca(sk);

	switch (event) {
	case CA_EVENT_COMPLETE_CWR:
		/* Fast recovery (or CWR) is over: resume from the estimated window. */
		tp->snd_ssthresh = westwood_bw_rttmin(sk);
		/*
		 * Kernel: tcp_snd_cwnd_set(), which also warns on a value <= 0; the value
		 * here is at least 2.
		 */
		tp->snd_cwnd = tp->snd_ssthresh;
		break;
	case CA_EVENT_LOSS:
		/* RTO: the kernel sets cwnd to 1 after this; slow start up to the estimate. */
		tp->snd_ssthresh = westwood_bw_rttmin(sk);
		/* Update RTT_min when next ack arrives */
		w->reset_rtt_min = 1;
		break;
	default:
		/* don't care */
		break;
	}
}

/*
 * The kernel module's .ssthresh, .cong_avoid and .undo_cwnd are tcp_reno's (reno_steps.h): on
 * entering recovery the window is halved as Reno's, and CA_EVENT_COMPLETE_CWR replaces it when
 * recovery ends; the window grows as sl_newreno's.
 *
 * Kernel: the module also has .get_info (rtt and rtt_min in INET_DIAG_VEGASINFO, for
 * `ss -i`); the kernel refuses get_info in a BPF tcp_congestion_ops (unsupported_ops in
 * net/ipv4/bpf_tcp_ca.c), so sl_westwood reports only the common tcp_info.
 */
SEC(".struct_ops")
struct tcp_congestion_ops sl_westwood = {
	.init		= (void *)westwood_init,
	.ssthresh	= (void *)reno_ssthresh,
	.cong_avoid	= (void *)reno_cong_avoid,
	.undo_cwnd	= (void *)reno_undo_cwnd,
	.cwnd_event	= (void *)westwood_cwnd_event,
	.in_ack_event	= (void *)westwood_in_ack_event,
	.pkts_acked	= (void *)westwood_pkts_acked,
	.name		= "sl_westwood",
};
