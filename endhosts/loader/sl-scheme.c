// SPDX-License-Identifier: GPL-2.0-only
/*
 * sl-scheme: loads one SatLab end-host scheme (build/<scheme>.bpf.o) into the kernel for
 * as long as it runs, and takes everything out again when it stops.
 *
 *   sl-scheme --object build/eten.bpf.o --placeholder sl_beten --ca-name 1a2bs1beten \
 *             --pin-dir /sys/fs/bpf/satlab/1a2b [--tc-ingress eth0] \
 *             [--cgroup /sys/fs/cgroup/unified/satlab/1a2b-srv1] [--set MAP=HEX ...]
 *
 * What it does, in order:
 *  1. Reads the object and renames its congestion control: the kernel keys congestion
 *     controls by name, globally (not per network namespace), so every testbed host
 *     registers its own instance. The 16-byte name field of the object's struct_ops data
 *     holds the placeholder; it is overwritten in the ELF image before libbpf opens it
 *     (libbpf 1.1, Debian 12's, cannot change struct_ops data after open).
 *  2. Opens it with maps marked LIBBPF_PIN_BY_NAME pinned under --pin-dir (the emulator's
 *     Oracle writer and bpftool find them there); tc programs are loaded only with
 *     --tc-ingress, sockops programs only with --cgroup.
 *  3. Loads (the verifier runs here), writes --set values (key 0 of an array map; hex of
 *     the value struct, packed by the caller), and attaches through BPF links: the
 *     congestion control as a struct_ops link (map flag BPF_F_LINK, Linux 6.4+), the tc
 *     program as a tcx ingress link (Linux 6.6+), the sockops program as a cgroup link on
 *     the host's cgroup (the sockets of the processes in it). Links end with the process, so nothing
 *     stays registered or attached even if it is killed with SIGKILL.
 *  4. Prints {"ready": {... "links": {"struct_ops": ID, "tcx": ID}}} and waits for SIGTERM/SIGINT; then prints the counters of every
 *     map whose name ends in _stats as its last line ({"stats": {...}}), detaches, unpins and
 *     removes the pin directory.
 *
 * libbpf 1.1 predates struct_ops and tcx links, so both links are made with the raw
 * bpf(BPF_LINK_CREATE) command; the constants are the kernel's (include/uapi/linux/bpf.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#define SL_BPF_F_LINK		(1U << 13)	/* struct_ops map registered through a link */
#define SL_BPF_STRUCT_OPS	44		/* enum bpf_attach_type */
#define SL_BPF_TCX_INGRESS	46
#define SL_BPF_CGROUP_SOCK_OPS	3
#define CA_NAME_MAX		16		/* TCP_CA_NAME_MAX, with the NUL */
#define MAX_SETS		8

static volatile sig_atomic_t stop;
static const char *made_pin_dir;	/* removed again if start-up fails */

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "sl-scheme: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	if (made_pin_dir)
		rmdir(made_pin_dir);
	exit(1);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: sl-scheme --object FILE --placeholder NAME --ca-name NAME --pin-dir DIR\n"
		"                 [--tc-ingress IFNAME] [--cgroup DIR] [--set MAP=HEX ...]\n");
	exit(2);
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		die("--object: cannot open %s: %s", path, strerror(errno));
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		die("--object: cannot size %s", path);
	buf = malloc(n);
	if (!buf || fread(buf, 1, n, f) != (size_t)n)
		die("--object: cannot read %s", path);
	fclose(f);
	*len = n;
	return buf;
}

/* Overwrites the one NUL-padded 16-byte field holding `from` with `to`. */
static void rename_ca(char *img, size_t len, const char *from, const char *to)
{
	char want[CA_NAME_MAX] = {0}, put[CA_NAME_MAX] = {0};
	char *hit = NULL;
	size_t i;

	if (strlen(from) >= CA_NAME_MAX)
		die("--placeholder: %s is longer than %d characters", from, CA_NAME_MAX - 1);
	if (strlen(to) == 0 || strlen(to) >= CA_NAME_MAX)
		die("--ca-name: %s must have 1 to %d characters", to, CA_NAME_MAX - 1);
	memcpy(want, from, strlen(from));
	memcpy(put, to, strlen(to));
	for (i = 0; i + CA_NAME_MAX <= len; i++) {
		if (memcmp(img + i, want, CA_NAME_MAX) == 0) {
			if (hit)
				die("--placeholder: %s occurs more than once in the object", from);
			hit = img + i;
		}
	}
	if (!hit)
		die("--placeholder: %s is not the object's congestion control name", from);
	memcpy(hit, put, CA_NAME_MAX);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void set_array_value(struct bpf_object *obj, const char *spec)
{
	const char *eq = strchr(spec, '=');
	char name[64];
	struct bpf_map *map;
	unsigned char *val;
	size_t hexlen, size, i;
	int key = 0;

	if (!eq || (size_t)(eq - spec) >= sizeof(name))
		die("--set: %s is not MAP=HEX", spec);
	memcpy(name, spec, eq - spec);
	name[eq - spec] = 0;
	map = bpf_object__find_map_by_name(obj, name);
	if (!map)
		die("--set: the object has no map %s", name);
	size = bpf_map__value_size(map);
	hexlen = strlen(eq + 1);
	if (hexlen != 2 * size)
		die("--set: %s takes %zu bytes (%zu hex digits), got %zu digits", name, size,
		    2 * size, hexlen);
	val = calloc(1, size);
	for (i = 0; i < size; i++) {
		int hi = hexval(eq[1 + 2 * i]), lo = hexval(eq[2 + 2 * i]);

		if (hi < 0 || lo < 0)
			die("--set: %s: not a hex digit at %zu", name, 2 * i);
		val[i] = hi << 4 | lo;
	}
	if (bpf_map_update_elem(bpf_map__fd(map), &key, val, 0))
		die("--set: writing %s: %s", name, strerror(errno));
	free(val);
}

static int link_create(int fd, int target, int attach_type)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.link_create.prog_fd = fd;	/* map_fd for struct_ops: the same union member */
	attr.link_create.target_fd = target;
	attr.link_create.attach_type = attach_type;
	return syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
}

/*
 * Links every program of the given type in obj to target (attach_type); dies naming the
 * program and "<where><suffix>" when the kernel refuses one. Returns the last link's fd.
 */
static int attach_programs(struct bpf_object *obj, enum bpf_prog_type type, int target,
			   int attach_type, const char *where, const char *suffix)
{
	struct bpf_program *prog;
	int link = -1;

	bpf_object__for_each_program(prog, obj) {
		if (bpf_program__type(prog) != type)
			continue;
		link = link_create(bpf_program__fd(prog), target, attach_type);
		if (link < 0)
			die("attaching %s to %s%s: %s", bpf_program__name(prog), where, suffix,
			    strerror(errno));
	}
	return link;
}

/* The kernel's id of a link (bpftool link show id N), or 0. */
static unsigned int link_id(int fd)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	return info.id;
}

static void print_stats(struct bpf_object *obj)
{
	struct bpf_map *map;
	int first = 1;

	printf("{\"stats\": {");
	bpf_object__for_each_map(map, obj) {
		const char *name = bpf_map__name(map);
		size_t n = strlen(name);
		__u32 k;

		if (n < 6 || strcmp(name + n - 6, "_stats") || bpf_map__value_size(map) != 8)
			continue;
		printf("%s\"%s\": [", first ? "" : ", ", name);
		first = 0;
		for (k = 0; k < bpf_map__max_entries(map); k++) {
			__u64 v = 0;

			bpf_map_lookup_elem(bpf_map__fd(map), &k, &v);
			printf("%s%llu", k ? ", " : "", (unsigned long long)v);
		}
		printf("]");
	}
	printf("}}\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *object = NULL, *placeholder = NULL, *ca_name = NULL, *pin_dir = NULL;
	const char *tc_dev = NULL, *cgroup = NULL, *sets[MAX_SETS];
	int nsets = 0, i, ca_link = -1, tc_link = -1, cg_link = -1;
	struct bpf_program *prog;
	struct bpf_object *obj;
	struct bpf_map *map;
	size_t len;
	char *img;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			usage();
		if (!strcmp(a, "--object"))
			object = v;
		else if (!strcmp(a, "--placeholder"))
			placeholder = v;
		else if (!strcmp(a, "--ca-name"))
			ca_name = v;
		else if (!strcmp(a, "--pin-dir"))
			pin_dir = v;
		else if (!strcmp(a, "--tc-ingress"))
			tc_dev = v;
		else if (!strcmp(a, "--cgroup"))
			cgroup = v;
		else if (!strcmp(a, "--set") && nsets < MAX_SETS)
			sets[nsets++] = v;
		else
			usage();
		i++;
	}
	if (!object || !placeholder || !ca_name || !pin_dir)
		usage();

	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	libbpf_set_strict_mode(LIBBPF_STRICT_ALL);

	img = read_file(object, &len);
	rename_ca(img, len, placeholder, ca_name);
	if (mkdir(pin_dir, 0700) == 0)
		made_pin_dir = pin_dir;
	else if (errno != EEXIST)
		die("--pin-dir: cannot create %s: %s", pin_dir, strerror(errno));

	LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = ca_name, .pin_root_path = pin_dir);
	obj = bpf_object__open_mem(img, len, &opts);
	if (!obj)
		die("opening %s: %s", object, strerror(errno));

	bpf_object__for_each_map(map, obj) {
		if (bpf_map__type(map) == BPF_MAP_TYPE_STRUCT_OPS)
			bpf_map__set_map_flags(map, bpf_map__map_flags(map) | SL_BPF_F_LINK);
	}
	bpf_object__for_each_program(prog, obj) {
		if (bpf_program__type(prog) == BPF_PROG_TYPE_SCHED_CLS && !tc_dev)
			bpf_program__set_autoload(prog, false);
		if (bpf_program__type(prog) == BPF_PROG_TYPE_SOCK_OPS && !cgroup)
			bpf_program__set_autoload(prog, false);
	}
	if (bpf_object__load(obj))
		die("loading %s (the verifier's log is above): %s", object, strerror(errno));
	for (i = 0; i < nsets; i++)
		set_array_value(obj, sets[i]);

	bpf_object__for_each_map(map, obj) {
		if (bpf_map__type(map) != BPF_MAP_TYPE_STRUCT_OPS)
			continue;
		/* stores the programs in the map (state READY); the link registers them */
		struct bpf_link *fake = bpf_map__attach_struct_ops(map);

		if (!fake)
			die("preparing struct_ops %s: %s", bpf_map__name(map), strerror(errno));
		ca_link = link_create(bpf_map__fd(map), 0, SL_BPF_STRUCT_OPS);
		if (ca_link < 0)
			die("registering congestion control %s: %s", ca_name, strerror(errno));
	}
	if (tc_dev) {
		unsigned int ifindex = if_nametoindex(tc_dev);

		if (!ifindex)
			die("--tc-ingress: no interface %s in this network namespace", tc_dev);
		tc_link = attach_programs(obj, BPF_PROG_TYPE_SCHED_CLS, ifindex, SL_BPF_TCX_INGRESS,
					  tc_dev, " ingress");
	}

	if (cgroup) {
		int cg = open(cgroup, O_RDONLY | O_DIRECTORY);

		if (cg < 0)
			die("--cgroup: cannot open %s: %s", cgroup, strerror(errno));
		cg_link = attach_programs(obj, BPF_PROG_TYPE_SOCK_OPS, cg, SL_BPF_CGROUP_SOCK_OPS,
					  cgroup, "");
		close(cg);
	}

	printf("{\"ready\": {\"ca\": \"%s\", \"tc_ingress\": %s%s%s, \"pin_dir\": \"%s\", "
	       "\"links\": {\"struct_ops\": %u, \"tcx\": %u, \"cgroup\": %u}}}\n",
	       ca_name, tc_dev ? "\"" : "", tc_dev ? tc_dev : "null", tc_dev ? "\"" : "", pin_dir,
	       link_id(ca_link), link_id(tc_link), link_id(cg_link));
	fflush(stdout);

	while (!stop)
		pause();

	print_stats(obj);
	if (cg_link >= 0)
		close(cg_link);
	if (tc_link >= 0)
		close(tc_link);
	if (ca_link >= 0)
		close(ca_link);
	bpf_object__unpin_maps(obj, NULL);
	bpf_object__close(obj);
	rmdir(pin_dir);
	free(img);
	return 0;
}
