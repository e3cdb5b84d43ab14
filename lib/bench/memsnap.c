// SPDX-License-Identifier: GPL-2.0
/*
 * memsnap - the memory snapshots of `minitty bench`: PID 1 of its memory
 * boots (lib/bench/meminit.sh mounts /proc and execs it; bench_root()
 * in lib/bench/guestbench.py compiles it into the boot's initramfs).
 *
 * Why a program: the bench counts the pages that opening ttyAMA0 takes,
 * to the page. A shell that forks awk for each snapshot and grows as it
 * goes moves the free page count by more than that. This one process
 * maps, touches and locks every buffer it uses before the first snapshot
 * and never forks, so between two snapshots only the TTY layer (and the
 * kernel's background work, if any) allocates.
 *
 * A snapshot opens /proc/meminfo, slabinfo, vmallocinfo, zoneinfo and
 * interrupts, reads one byte of each (which allocates its seq_file
 * buffer), seeks each back to 0, reads them all whole into memory, and
 * only then closes them: every file is read with the same transient
 * allocations in place, and nothing is allocated between the reads. The
 * bench kernels are uniprocessor (no per-CPU counter differentials), and
 * zoneinfo prints a zone's free pages and its per-CPU free list under the
 * zone lock: their sum is the exact number of free pages.
 *
 *     memsnap CYCLES
 *
 * Snapshots: "closed 0"; then each cycle i opens the port (O_RDWR |
 * O_NOCTTY): "open i"; writes "@@BENCH-RX i" and reads the line the host
 * answers (lib/bench/guestbench.py memory_run()): "traffic i"; closes
 * it: "closed i+1". Each a second after what it follows (the full TTY
 * layer frees the tty from a work item after the last close). Then each
 * snapshot is printed on the port as one line, between @@BENCH-BEGIN and
 * @@BENCH-END (guestbench.py parse_snap()), and the guest powers off:
 *
 *     TAG CYCLE Field=kB... slab:NAME=ACTIVE*OBJSIZE*PAGES...
 *         vm:CALLER=PAGES*AREAS... vmap_areas=N vmap_unpurged=N
 *         vmalloc_pages=N free_pages=N pcp_pages=N percpu_vmstat=N
 *         uart_irq=N [got=LINE]
 *
 * Field=kB: /proc/meminfo; slab: each cache's active objects, object size
 * and pages (num_slabs * pagesperslab); vm: the vmalloc areas by caller
 * (an address: the bench kernels have no kallsyms; the host looks it up
 * in System.map), with vmap_areas their number and vmalloc_pages their
 * pages; vmap_unpurged: freed areas not yet purged (lazily, no memory);
 * free_pages and pcp_pages: /proc/zoneinfo's pages free and count:, in
 * pages; percpu_vmstat: its "vm stats threshold" lines, which only an SMP
 * kernel has (its counters then lag: not exact); uart_irq: lines of
 * /proc/interrupts naming a UART (whether the port's interrupt is
 * requested); got: the line read back.
 * On an error it prints "memsnap: error: ..." and @@BENCH-END instead.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/reboot.h>

#ifndef TTY_PATH /* the arch's serial port (guestbench.py: bench_root) */
#define TTY_PATH "/dev/ttyAMA0"
#endif

enum { MEMINFO, SLABINFO, VMALLOCINFO, ZONEINFO, INTERRUPTS, NFILES };

static const struct {
	const char *path;
	size_t size;		/* room for its text */
} files[NFILES] = {
	[MEMINFO]	= { "/proc/meminfo", 8 << 10 },
	[SLABINFO]	= { "/proc/slabinfo", 64 << 10 },
	[VMALLOCINFO]	= { "/proc/vmallocinfo", 32 << 10 },
	[ZONEINFO]	= { "/proc/zoneinfo", 16 << 10 },
	[INTERRUPTS]	= { "/proc/interrupts", 8 << 10 },
};

struct snap {
	const char *tag;
	int cycle;
	int traffic;		/* has a got= */
	char got[64];
	char *text[NFILES];
	size_t len[NFILES];
};

#define LINE_SIZE	(256 << 10)
#define MAX_CALLERS	256

static struct snap *snaps;
static int nsnaps;
static char *line;		/* one output line */

static void power_off(void)
{
	sync();
	reboot(RB_POWER_OFF);
	for (;;)		/* PID 1 must not exit */
		pause();
}

static void write_all(int fd, const char *s, size_t n)
{
	ssize_t r;

	while (n) {
		r = write(fd, s, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;
		s += r;
		n -= r;
	}
}

static void die(const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	int fd, n;

	n = snprintf(msg, sizeof(msg), "memsnap: error: ");
	va_start(ap, fmt);
	n += vsnprintf(msg + n, sizeof(msg) - n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(msg) - 16)
		n = sizeof(msg) - 16;
	n += snprintf(msg + n, sizeof(msg) - n, "\n@@BENCH-END\n");
	fd = open(TTY_PATH, O_WRONLY | O_NOCTTY);
	if (fd >= 0) {
		write_all(fd, msg, n);
		tcdrain(fd);
		close(fd);
	}
	sleep(1);
	power_off();
}

static void *map(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED)
		die("mmap %zu bytes: %s", size, strerror(errno));
	memset(p, 0, size);	/* every page present before the first snapshot */
	return p;
}

/* Fault in the stack the rest will use, before mlockall() locks it. */
static void touch_stack(void)
{
	char pad[64 << 10];

	memset(pad, 1, sizeof(pad));
	__asm__ volatile("" : : "r"(pad) : "memory");
}

static void pause_s(int s)
{
	struct timespec ts = { .tv_sec = s };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void read_whole(int fd, struct snap *s, int i)
{
	size_t n = 0, room = files[i].size - 1;
	ssize_t r;

	while (n < room) {
		r = read(fd, s->text[i] + n, room - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("read %s: %s", files[i].path, strerror(errno));
		if (r == 0)
			break;
		n += r;
	}
	if (n == room)
		die("%s: more than %zu bytes", files[i].path, room);
	s->text[i][n] = '\0';
	s->len[i] = n;
}

static void snapshot(struct snap *s, const char *tag, int cycle)
{
	int fd[NFILES], i;
	char c;

	s->tag = tag;
	s->cycle = cycle;
	for (i = 0; i < NFILES; i++) {
		fd[i] = open(files[i].path, O_RDONLY | O_CLOEXEC);
		if (fd[i] < 0)
			die("open %s: %s", files[i].path, strerror(errno));
	}
	/* the seq_file buffers, grown to the size of a record, stay until close */
	for (i = 0; i < NFILES; i++)
		if (read(fd[i], &c, 1) != 1 || lseek(fd[i], 0, SEEK_SET) != 0)
			die("first byte of %s: %s", files[i].path, strerror(errno));
	for (i = 0; i < NFILES; i++)
		read_whole(fd[i], s, i);
	for (i = 0; i < NFILES; i++)
		close(fd[i]);
}

static struct snap *next_snap(void)
{
	return &snaps[nsnaps++];
}

/* Read one line from @fd into @buf within @ms milliseconds. */
static void read_line(int fd, char *buf, size_t size, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t n = 0;
	ssize_t r;

	buf[0] = '\0';
	while (n < size - 1 && !memchr(buf, '\n', n)) {
		if (poll(&p, 1, ms) <= 0)
			break;
		r = read(fd, buf + n, size - 1 - n);
		if (r <= 0)
			break;
		n += r;
	}
	buf[n] = '\0';
	/* one word for the output line */
	buf[strcspn(buf, "\r\n")] = '\0';
	for (r = 0; buf[r]; r++)
		if (buf[r] == ' ' || buf[r] == '\t' || buf[r] == '=')
			buf[r] = '_';
}

/* --- the output line of a snapshot ---------------------------------- */
static size_t out_len;

static void out(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line + out_len, LINE_SIZE - out_len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= LINE_SIZE - out_len)
		die("output line longer than %d bytes", LINE_SIZE);
	out_len += n;
}

/* The next line of @text from *@pos, NUL-terminated in @buf. */
static int next_line(const char *text, size_t *pos, char *buf, size_t size)
{
	size_t n;
	const char *s = text + *pos, *e;

	if (!*s)
		return 0;
	e = strchr(s, '\n');
	n = e ? (size_t)(e - s) : strlen(s);
	*pos += n + (e ? 1 : 0);
	if (n >= size)
		n = size - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return 1;
}

static void out_meminfo(const char *text)
{
	char l[256], *colon;
	size_t pos = 0;

	while (next_line(text, &pos, l, sizeof(l))) {
		colon = strchr(l, ':');
		if (!colon)
			continue;
		*colon = '\0';
		out(" %s=%lu", l, strtoul(colon + 1, NULL, 10));
	}
}

static void out_slabinfo(const char *text)
{
	unsigned long act, num, size, per, pps, aslabs, nslabs;
	char l[512], name[128];
	size_t pos = 0;

	while (next_line(text, &pos, l, sizeof(l))) {
		if (sscanf(l, "%127s %lu %lu %lu %lu %lu : tunables %*u %*u %*u : slabdata %lu %lu",
			   name, &act, &num, &size, &per, &pps, &aslabs, &nslabs) != 8)
			continue;	/* the two header lines */
		out(" slab:%s=%lu*%lu*%lu", name, act, size, nslabs * pps);
	}
}

static void out_vmallocinfo(const char *text)
{
	static struct { char name[64]; unsigned long pages, areas; } c[MAX_CALLERS];
	unsigned long areas = 0, unpurged = 0, pages = 0, size, p;
	char l[512], caller[64];
	const char *pp;
	size_t pos = 0;
	int n = 0, i;

	while (next_line(text, &pos, l, sizeof(l))) {
		if (sscanf(l, "%*s %lu %63s", &size, caller) != 2)
			continue;
		if (!strcmp(caller, "unpurged")) {
			unpurged++;
			continue;
		}
		areas++;
		pp = strstr(l, " pages=");
		p = pp ? strtoul(pp + 7, NULL, 10) : 0;
		pages += p;
		for (i = 0; i < n && strcmp(c[i].name, caller); i++)
			;
		if (i == n) {
			if (n == MAX_CALLERS)
				die("more than %d vmalloc callers", MAX_CALLERS);
			snprintf(c[n].name, sizeof(c[n].name), "%s", caller);
			c[n].pages = 0;
			c[n].areas = 0;
			n++;
		}
		c[i].pages += p;
		c[i].areas++;
	}
	for (i = 0; i < n; i++)
		out(" vm:%s=%lu*%lu", c[i].name, c[i].pages, c[i].areas);
	out(" vmap_areas=%lu vmap_unpurged=%lu vmalloc_pages=%lu", areas, unpurged, pages);
}

static void out_zoneinfo(const char *text)
{
	unsigned long free = 0, pcp = 0, v;
	char l[256], *s;
	size_t pos = 0;
	int diffs = 0;

	while (next_line(text, &pos, l, sizeof(l))) {
		s = l + strspn(l, " ");
		if (sscanf(s, "pages free %lu", &v) == 1)
			free += v;
		else if (sscanf(s, "count: %lu", &v) == 1)
			pcp += v;
		else if (!strncmp(s, "vm stats threshold:", 19))
			diffs++;	/* CONFIG_SMP: counters lag by up to this */
	}
	out(" free_pages=%lu pcp_pages=%lu percpu_vmstat=%d", free, pcp, diffs);
}

static void out_interrupts(const char *text)
{
	char l[512];
	size_t pos = 0;
	int n = 0;

	while (next_line(text, &pos, l, sizeof(l)))
		if (strstr(l, "uart"))
			n++;
	out(" uart_irq=%d", n);
}

static void print_snaps(void)
{
	int fd, i;

	fd = open(TTY_PATH, O_RDWR | O_NOCTTY);
	if (fd < 0)
		die("open " TTY_PATH ": %s", strerror(errno));
	write_all(fd, "@@BENCH-BEGIN\n", 14);
	for (i = 0; i < nsnaps; i++) {
		struct snap *s = &snaps[i];

		out_len = 0;
		out("%s %d", s->tag, s->cycle);
		out_meminfo(s->text[MEMINFO]);
		out_slabinfo(s->text[SLABINFO]);
		out_vmallocinfo(s->text[VMALLOCINFO]);
		out_zoneinfo(s->text[ZONEINFO]);
		out_interrupts(s->text[INTERRUPTS]);
		if (s->traffic)
			out(" got=%s", s->got);
		out("\n");
		write_all(fd, line, out_len);
	}
	write_all(fd, "@@BENCH-END\n", 12);
	tcdrain(fd);
	close(fd);
}

int main(int argc, char **argv)
{
	int cycles, fd, i, f;
	size_t per = 0;
	char *mem, msg[64];
	struct snap scratch;

	cycles = argc > 1 ? atoi(argv[1]) : 0;
	/* (128 KiB a snapshot, three a cycle, in a 64 MiB guest) */
	if (cycles < 1 || cycles > 30)
		die("usage: memsnap CYCLES (1 to 30)");

	/* everything it will write to, present and locked before it starts */
	nsnaps = 0;
	snaps = map((3 * cycles + 1) * sizeof(*snaps));
	for (f = 0; f < NFILES; f++)
		per += files[f].size;
	mem = map((3 * cycles + 2) * per);
	for (i = 0; i < 3 * cycles + 2; i++) {
		struct snap *s = i < 3 * cycles + 1 ? &snaps[i] : &scratch;

		for (f = 0; f < NFILES; f++) {
			s->text[f] = mem;
			mem += files[f].size;
		}
	}
	line = map(LINE_SIZE);
	touch_stack();
	if (mlockall(MCL_CURRENT))
		die("mlockall: %s", strerror(errno));

	/* the first reads of /proc make its inodes and dentries: not counted */
	snapshot(&scratch, "warmup", 0);
	snapshot(&scratch, "warmup", 0);
	pause_s(1);
	snapshot(next_snap(), "closed", 0);
	for (i = 0; i < cycles; i++) {
		struct snap *s;

		fd = open(TTY_PATH, O_RDWR | O_NOCTTY);
		if (fd < 0)
			die("open " TTY_PATH ": %s", strerror(errno));
		pause_s(1);
		snapshot(next_snap(), "open", i);

		/* one line out, one line in (the host answers this marker) */
		snprintf(msg, sizeof(msg), "@@BENCH-RX %d\n", i);
		write_all(fd, msg, strlen(msg));
		s = &snaps[nsnaps];
		read_line(fd, s->got, sizeof(s->got), 20000);
		s->traffic = 1;
		pause_s(1);
		snapshot(next_snap(), "traffic", i);

		close(fd);
		/* the full TTY layer's last close frees the tty from a work item */
		pause_s(1);
		snapshot(next_snap(), "closed", i + 1);
	}
	print_snaps();
	pause_s(1);
	power_off();
	return 0;
}
