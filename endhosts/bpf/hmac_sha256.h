/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * HMAC-SHA256 (RFC 2104, FIPS 180-4) in BPF, for authenticating ETEN notices
 * (crates/packet/src/eten.rs: the MAC is the first 16 bytes of HMAC-SHA256(key, message
 * bytes 0..36 with the ICMP checksum zeroed)).
 *
 * The kernel's crypto kfuncs cover symmetric ciphers only, so the hash is computed here:
 * four SHA-256 compressions per notice (key^ipad, message; key^opad, inner digest), about
 * 10k instructions, run only for notices that passed the cheaper checks and the rate
 * limit. The 64-word message schedule does not fit the 512-byte BPF stack, so it lives in
 * a per-CPU scratch map value.
 */
#ifndef SATLAB_HMAC_SHA256_H
#define SATLAB_HMAC_SHA256_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#define HMAC_KEY_MAX	64	/* one SHA-256 block; longer keys are rejected by the loader */
#define HMAC_MSG_LEN	36	/* ETEN notice bytes covered by the MAC */

struct sha256_scratch {
	__u32 w[64];
	__u8 block[64];
	__u32 h[8];
	__u32 inner[8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sha256_scratch);
} sha256_scratch SEC(".maps");

const __u32 sha256_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

const __u32 sha256_iv[8] = {
	0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

#define ROR32(x, n)	(((x) >> (n)) | ((x) << (32 - (n))))

/* One SHA-256 compression of s->block into s->h (FIPS 180-4 section 6.2.2). */
static __noinline int sha256_compress(struct sha256_scratch *s)
{
	__u32 a, b, c, d, e, f, g, h, t1, t2;
	int i;

	if (!s)
		return 0;
	for (i = 0; i < 16; i++) {
		__u32 j = (i & 15) * 4;

		s->w[i & 15] = (__u32)s->block[j & 63] << 24 | (__u32)s->block[(j + 1) & 63] << 16 |
			       (__u32)s->block[(j + 2) & 63] << 8 | (__u32)s->block[(j + 3) & 63];
	}
	for (i = 16; i < 64; i++) {
		__u32 w15 = s->w[(i - 15) & 63], w2 = s->w[(i - 2) & 63];
		__u32 s0 = ROR32(w15, 7) ^ ROR32(w15, 18) ^ (w15 >> 3);
		__u32 s1 = ROR32(w2, 17) ^ ROR32(w2, 19) ^ (w2 >> 10);

		s->w[i & 63] = s->w[(i - 16) & 63] + s0 + s->w[(i - 7) & 63] + s1;
	}
	a = s->h[0]; b = s->h[1]; c = s->h[2]; d = s->h[3];
	e = s->h[4]; f = s->h[5]; g = s->h[6]; h = s->h[7];
	for (i = 0; i < 64; i++) {
		t1 = h + (ROR32(e, 6) ^ ROR32(e, 11) ^ ROR32(e, 25)) + ((e & f) ^ (~e & g)) +
		     sha256_k[i & 63] + s->w[i & 63];
		t2 = (ROR32(a, 2) ^ ROR32(a, 13) ^ ROR32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		h = g; g = f; f = e; e = d + t1;
		d = c; c = b; b = a; a = t1 + t2;
	}
	s->h[0] += a; s->h[1] += b; s->h[2] += c; s->h[3] += d;
	s->h[4] += e; s->h[5] += f; s->h[6] += g; s->h[7] += h;
	return 0;
}

/* s->block = key ^ pad (the key is zero-padded to a block). */
static __always_inline void hmac_pad_block(struct sha256_scratch *s, const __u8 *key, __u8 pad)
{
	for (int i = 0; i < 64; i++)
		s->block[i] = key[i] ^ pad;
}

/* Writes the final length (bits) into the last 8 bytes of s->block, big-endian. */
static __always_inline void sha256_put_len(struct sha256_scratch *s, __u64 bits)
{
	for (int i = 0; i < 8; i++)
		s->block[63 - i] = (__u8)(bits >> (8 * i));
}

/* A new SHA-256 over the padded key block (key ^ pad), leaving block zeroed for the data. */
static __always_inline void hmac_start(struct sha256_scratch *s, const __u8 *key, __u8 pad)
{
	int i;

	for (i = 0; i < 8; i++)
		s->h[i] = sha256_iv[i];
	hmac_pad_block(s, key, pad);
	sha256_compress(s);
	for (i = 0; i < 64; i++)
		s->block[i] = 0;
}

/*
 * Returns 1 when the first 16 bytes of HMAC-SHA256(key, msg[0..36]) equal mac.
 * key: HMAC_KEY_MAX bytes, zero padded (keys longer than a block are refused up front).
 */
static __always_inline int hmac_sha256_16_ok(const __u8 *key, const __u8 *msg, const __u8 *mac)
{
	__u32 zero = 0;
	struct sha256_scratch *s = bpf_map_lookup_elem(&sha256_scratch, &zero);
	int i;

	if (!s)
		return 0;
	/* inner = SHA256((key ^ ipad) || msg) */
	hmac_start(s, key, 0x36);
	for (i = 0; i < HMAC_MSG_LEN; i++)
		s->block[i] = msg[i];
	s->block[HMAC_MSG_LEN] = 0x80;
	sha256_put_len(s, (64 + HMAC_MSG_LEN) * 8);
	sha256_compress(s);
	for (i = 0; i < 8; i++)
		s->inner[i] = s->h[i];

	/* outer = SHA256((key ^ opad) || inner) */
	hmac_start(s, key, 0x5c);
	for (i = 0; i < 8; i++) {
		s->block[4 * i] = s->inner[i] >> 24;
		s->block[4 * i + 1] = s->inner[i] >> 16;
		s->block[4 * i + 2] = s->inner[i] >> 8;
		s->block[4 * i + 3] = s->inner[i];
	}
	s->block[32] = 0x80;
	sha256_put_len(s, (64 + 32) * 8);
	sha256_compress(s);

	__u8 diff = 0;

	for (i = 0; i < 16; i++)
		diff |= mac[i] ^ (__u8)(s->h[i / 4] >> (24 - 8 * (i % 4)));
	return diff == 0;
}

#endif /* SATLAB_HMAC_SHA256_H */
