/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The congestion control of every scheme whose notices name the lost segment (per-packet ETEN:
 * eten.bpf.c, whose header comment describes the decisions; receiver checksum notices:
 * csumld.bpf.c). NewReno, except that a loss whose segment at snd_una was notified keeps cwnd
 * and ssthresh (keep_window.h), and a notice arriving while the recovery it should have
 * prevented lasts withdraws the cut (late_notice).
 *
 * The including file provides, before including this header:
 *   int notified(struct sock *sk, __u32 seq)  was the segment notified? (consumes the notice)
 *   void count(__u32 stat), void uncount(__u32 stat)  its counters (scheme_maps.h), with the
 *   indexes STAT_LOSS_CORRUPTION, STAT_LOSS_CONGESTION, STAT_LATE_NOTICE
 * and declares its SEC(".struct_ops") map with NOTIFIED_LOSS_OPS below.
 */
#ifndef SATLAB_NOTIFIED_LOSS_H
#define SATLAB_NOTIFIED_LOSS_H

#include "keep_window.h"
#define RENO_CONG_AVOID
#include "reno_steps.h"

struct notified_ca {
	struct keep_window kw;
	__u32 prior_cwnd;	/* cwnd when the current recovery began */
	__u32 loss_seq;		/* the segment that started it */
	__u8 pending;		/* ... is a congestion loss so far: a late notice may still come */
};

SEC("struct_ops/nl_init")
void BPF_PROG(nl_init, struct sock *sk)
{
	struct notified_ca *ca = inet_csk_ca(sk);

	kw_init(&ca->kw);
	ca->prior_cwnd = 0;
	ca->loss_seq = 0;
	ca->pending = 0;
}

SEC("struct_ops/nl_ssthresh")
__u32 BPF_PROG(nl_ssthresh, struct sock *sk)
{
	struct notified_ca *ca = inet_csk_ca(sk);
	const struct tcp_sock *tp = tcp_sk(sk);

	ca->prior_cwnd = tp->snd_cwnd;
	ca->loss_seq = tp->snd_una;
	ca->pending = 0;
	if (notified(sk, tp->snd_una)) {
		count(STAT_LOSS_CORRUPTION);
		return kw_corruption_ssthresh(&ca->kw, tp);
	}
	count(STAT_LOSS_CONGESTION);
	ca->pending = 1;
	return kw_congestion_ssthresh(&ca->kw, tp);
}

SEC("struct_ops/nl_in_ack_event")
void BPF_PROG(nl_in_ack_event, struct sock *sk, __u32 flags)
{
	struct notified_ca *ca = inet_csk_ca(sk);
	__u8 state = inet_csk(sk)->icsk_ca_state;

	if (!ca->pending)
		return;
	if (state != TCP_CA_Recovery && state != TCP_CA_Loss) {
		ca->pending = 0;	/* recovery is over: the reduction stands */
		return;
	}
	if (!notified(sk, ca->loss_seq))
		return;
	/* withdraw the reduction: as if ssthresh() had seen the notice */
	tcp_sk(sk)->snd_ssthresh = sl_max(ca->prior_cwnd, 2U);
	ca->kw.corruption = 1;
	ca->pending = 0;
	count(STAT_LOSS_CORRUPTION);
	count(STAT_LATE_NOTICE);
	uncount(STAT_LOSS_CONGESTION);
}

SEC("struct_ops/nl_cwnd_event")
void BPF_PROG(nl_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct notified_ca *ca = inet_csk_ca(sk);

	if (kw_recovery_complete(ev)) {
		kw_restore(&ca->kw, tcp_sk(sk));
		ca->pending = 0;
	}
}

SEC("struct_ops/nl_set_state")
void BPF_PROG(nl_set_state, struct sock *sk, __u8 new_state)
{
	struct notified_ca *ca = inet_csk_ca(sk);

	if (kw_loss_over(sk, new_state)) {
		kw_restore(&ca->kw, tcp_sk(sk));
		ca->pending = 0;
	}
}

SEC("struct_ops/nl_undo_cwnd")
__u32 BPF_PROG(nl_undo_cwnd, struct sock *sk)
{
	struct notified_ca *ca = inet_csk_ca(sk);

	/* The kernel found the reduction spurious and restores ssthresh itself. */
	ca->kw.corruption = 0;
	ca->pending = 0;
	return sl_tcp_reno_undo_cwnd(sk);
}

/*
 * The including file's congestion control: NOTIFIED_LOSS_OPS(beten_ops, "sl_beten"). The name is
 * a placeholder: the kernel keys congestion controls by name, globally, so the loader (sl-scheme)
 * registers one instance per testbed host under a unique name written into this field before
 * load, and the runner selects that name per socket.
 */
#define NOTIFIED_LOSS_OPS(var, placeholder_name)		\
	SEC(".struct_ops")					\
	struct tcp_congestion_ops var = {			\
		.init		= (void *)nl_init,		\
		.ssthresh	= (void *)nl_ssthresh,		\
		.cong_avoid	= (void *)reno_cong_avoid,	\
		.cwnd_event	= (void *)nl_cwnd_event,	\
		.in_ack_event	= (void *)nl_in_ack_event,	\
		.set_state	= (void *)nl_set_state,		\
		.undo_cwnd	= (void *)nl_undo_cwnd,		\
		.name		= placeholder_name,		\
	}

#endif /* SATLAB_NOTIFIED_LOSS_H */
