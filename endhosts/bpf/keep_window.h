/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The loss response every loss-differentiation scheme shares: a loss classified as
 * corruption on the satellite link is retransmitted (by the kernel, as any loss) "without
 * changing congestion state" (ETEN report section 2), a loss
 * classified as congestion gets NewReno's halving (tcp_reno_ssthresh).
 *
 * How the kernel is made to keep the window: ssthresh() returns the current cwnd, so PRR
 * keeps sending at the old rate during recovery and tcp_end_cwnd_reduction (cwnd =
 * ssthresh) leaves cwnd where it was; the ssthresh in force before the loss is saved and
 * put back afterwards (CA_EVENT_COMPLETE_CWR after recovery; the return to Open after a
 * retransmission timeout, which has no COMPLETE_CWR), so slow start or congestion
 * avoidance resumes unchanged. After a timeout the kernel sets cwnd to 1 whatever the
 * congestion control says (tcp_enter_loss); keeping ssthresh at the old cwnd lets slow
 * start climb straight back to it. The report leaves timeouts open; this is our choice.
 */
#ifndef SATLAB_KEEP_WINDOW_H
#define SATLAB_KEEP_WINDOW_H

#include "tcp_ca_helpers.h"

struct keep_window {
	__u32 saved_ssthresh;	/* ssthresh before the loss, restored after a corruption loss */
	__u8 corruption;	/* the current recovery episode is a corruption loss */
};

/* init(): no loss seen yet. */
static __always_inline void kw_init(struct keep_window *kw)
{
	kw->saved_ssthresh = 0;
	kw->corruption = 0;
}

/* ssthresh() for a loss classified as corruption. */
static __always_inline __u32 kw_corruption_ssthresh(struct keep_window *kw,
						    const struct tcp_sock *tp)
{
	if (!kw->corruption)
		kw->saved_ssthresh = tp->snd_ssthresh;
	kw->corruption = 1;
	return sl_max(tp->snd_cwnd, 2U);
}

/* ssthresh() for a loss classified as congestion: tcp_reno_ssthresh(). The old ssthresh is
 * saved too, for a scheme that may still reclassify the loss during recovery. */
static __always_inline __u32 kw_congestion_ssthresh(struct keep_window *kw,
						    const struct tcp_sock *tp)
{
	if (!kw->corruption)
		kw->saved_ssthresh = tp->snd_ssthresh;
	kw->corruption = 0;
	return sl_max(tp->snd_cwnd >> 1U, 2U);
}

/* After recovery (or after the Loss state) from a corruption loss: ssthresh as before. */
static __always_inline void kw_restore(struct keep_window *kw, struct tcp_sock *tp)
{
	if (kw->corruption) {
		tp->snd_ssthresh = kw->saved_ssthresh;
		kw->corruption = 0;
	}
}

/* cwnd_event: recovery ended with cwnd = ssthresh = the pre-loss cwnd. */
static __always_inline int kw_recovery_complete(enum tcp_ca_event ev)
{
	return ev == CA_EVENT_COMPLETE_CWR;
}

/* set_state: back to Open from Loss. Recovery calls set_state(Open) before
 * tcp_end_cwnd_reduction, so only the Loss path may restore here. */
static __always_inline int kw_loss_over(const struct sock *sk, __u8 new_state)
{
	return new_state == TCP_CA_Open && inet_csk(sk)->icsk_ca_state == TCP_CA_Loss;
}

#endif /* SATLAB_KEEP_WINDOW_H */
