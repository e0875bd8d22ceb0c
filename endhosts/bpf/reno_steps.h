/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The kernel's Reno steps (net/ipv4/tcp_cong.c) as struct_ops programs, for a scheme that keeps
 * one or more of them unchanged:
 *   reno_ssthresh     tcp_reno_ssthresh    (sl_newreno, sl_westwood)
 *   reno_cong_avoid   tcp_reno_cong_avoid  (every scheme that grows its window as Reno: all but
 *                                           sl_ern, whose window is min(cwnd_tcp, cwnd_ern))
 *   reno_undo_cwnd    tcp_reno_undo_cwnd   (sl_newreno, sl_westwood, sl_ern)
 * The including file defines, before including this header, the ones its tcp_congestion_ops
 * references: RENO_SSTHRESH, RENO_CONG_AVOID, RENO_UNDO_CWND. Only those: libbpf 1.1 (Debian
 * 12's) loads every struct_ops program of an object, and one no struct_ops map refers to has no
 * callback to attach to and is refused. A step a scheme changes calls the arithmetic of
 * tcp_ca_helpers.h in the scheme's own program.
 */
#ifndef SATLAB_RENO_STEPS_H
#define SATLAB_RENO_STEPS_H

#include "tcp_ca_helpers.h"

#ifdef RENO_SSTHRESH
/* RFC 5681 eq. 4: on entering recovery or loss (RTO), half the window, never below 2 packets. */
SEC("struct_ops/reno_ssthresh")
__u32 BPF_PROG(reno_ssthresh, struct sock *sk)
{
	return sl_max(tcp_sk(sk)->snd_cwnd >> 1U, 2U);
}
#endif

#ifdef RENO_CONG_AVOID
SEC("struct_ops/reno_cong_avoid")
void BPF_PROG(reno_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	sl_tcp_reno_cong_avoid(sk, acked);
}
#endif

#ifdef RENO_UNDO_CWND
/* A spurious reduction restores the window before it. */
SEC("struct_ops/reno_undo_cwnd")
__u32 BPF_PROG(reno_undo_cwnd, struct sock *sk)
{
	return sl_tcp_reno_undo_cwnd(sk);
}
#endif

#endif /* SATLAB_RENO_STEPS_H */
