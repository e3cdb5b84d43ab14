// SPDX-License-Identifier: GPL-2.0
/*
 * ioctlfuzz - seeded ioctl() calls with random and bad arguments on
 * /dev/ttyAMA0, one result line per call, for a differential comparison
 * between flavours (issue 11, bin/minitty stress, lib/stress/stress.py).
 *
 *     ioctlfuzz SEED N
 *
 * Run from the shell on /dev/ttyAMA0. A child in a session of its own
 * opens the port (O_RDWR | O_NOCTTY | O_NONBLOCK) and makes N ioctl()
 * calls, each chosen from SEED alone: a request (any number of the tty
 * range 0x5401..0x5460, a request asm-generic/ioctls.h names, the
 * _IOC-encoded ones included: TCGETS2 and its setters, TIOCGPTN,
 * TIOCGDEV, TIOCGEXCL, TIOCGISO7816, ..., or a random 'T' request) and an
 * argument of a kind:
 *
 *   null    0
 *   unmap   a page that is not mapped
 *   kern    0xc0000000, kernel space
 *   edge    the last 2 bytes of a page followed by an unmapped page
 *   buf     a buffer of random bytes
 *   mut     a buffer holding the port's termios2 with a few bits flipped
 *   int     an integer: small (0..5) or out of range (0x7fffffff, -1, ...)
 *
 * The results are kept in memory while the calls run (the port's settings
 * change under them), then, settings restored, printed one line a call:
 *
 *     ioctlfuzz: I REQ KIND RET ERRNO DIGEST
 *
 * RET is ioctl()'s return value, ERRNO errno when it failed (else 0),
 * DIGEST (when the call succeeded with a buffer argument) an FNV-1a hash
 * of the buffer after the call, as hex, else "-". Every 100 calls (a line
 * "ioctlfuzz: I restore") the port gets back its settings, window size,
 * modem lines, break off, output on, exclusive mode off, O_NONBLOCK on,
 * O_ASYNC off, its queues flushed. Last line:
 *
 *     ioctlfuzz: done calls N restores N skipped N
 *
 * (skipped: the requests drawn and left out, below, drawn again)
 *
 * The same SEED and N give the same calls on every flavour: the host
 * compares the lines (tests/stress/ioctl-deviations lists the differences
 * that minitty is allowed).
 *
 * Left out, as they would hang the run or take the port from the test's
 * shell: TIOCMIWAIT (waits for a modem line change with no timeout),
 * TIOCVHANGUP (hangs up the shell's line), TIOCCONS (redirects the
 * console), TIOCSERCONFIG (reconfigures the port), TIOCSCTTY with a
 * non-zero argument (root steals the shell's controlling terminal),
 * TCSBRKP with an argument over 2 (a break of arg * 100 ms). Setters
 * that only the full layer honours (TIOCSSERIAL, TIOCSRS485, TIOCSISO7816,
 * TIOCSLCKTRMIOS, TIOCSSOFTCAR, TIOCSTI, TIOCEXCL) get only bad pointers
 * (null, unmap, kern): with a valid argument they would change the state
 * of the port on one flavour only (TIOCSSOFTCAR sets CLOCAL, TIOCSTI
 * queues input, TIOCEXCL makes the next open EBUSY) and every later line
 * would differ for it. TIOCMSET and TIOCMBIS never set TIOCM_LOOP (a
 * looped-back console would feed the input at random times). TIOCGICOUNT's
 * counts (the bytes the shell sent since boot) get no digest.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <asm/ioctls.h>
#include <linux/serial.h>
#include <asm/termbits.h>

#ifndef TTY_PATH /* the arch's serial port (lib/rootfs.sh: guest_cc) */
#define TTY_PATH "/dev/ttyAMA0"
#endif
#ifndef TIOCM_LOOP
#define TIOCM_LOOP 0x8000
#endif
#define PAGE 4096
#define RESTORE_EVERY 100
#define LINE 80

enum kind { K_NULL, K_UNMAP, K_KERN, K_EDGE, K_BUF, K_MUT, K_INT, NKINDS };
static const char *const kind_name[NKINDS] = {
	"null", "unmap", "kern", "edge", "buf", "mut", "int"
};

static uint32_t rng;

static uint32_t rnd(void)
{
	/* xorshift32: the same sequence on every flavour */
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

static int skipped_req(unsigned int req)
{
	switch (req) {
	case TIOCMIWAIT:
	case TIOCVHANGUP:
	case TIOCCONS:
	case TIOCSERCONFIG:
		return 1;
	}
	return 0;
}

/* setters honoured by the full layer only: bad pointers alone */
static int one_sided(unsigned int req)
{
	switch (req) {
	case TIOCSSERIAL:
	case TIOCSRS485:
	case TIOCSISO7816:
	case TIOCSLCKTRMIOS:
	case TIOCSSOFTCAR:
	case TIOCSTI:
	case TIOCEXCL:
		return 1;
	}
	return 0;
}

/* requests whose argument is an integer, not a pointer */
static int int_arg(unsigned int req)
{
	switch (req) {
	case TCSBRK:
	case TCSBRKP:
	case TCXONC:
	case TCFLSH:
	case TIOCSCTTY:
		return 1;
	}
	return 0;
}

/* the requests asm-generic/ioctls.h names */
static const unsigned int known_req[] = {
	TCGETS, TCSETS, TCSETSW, TCSETSF, TCGETA, TCSETA, TCSETAW, TCSETAF,
	TCSBRK, TCXONC, TCFLSH, TIOCEXCL, TIOCNXCL, TIOCSCTTY, TIOCGPGRP,
	TIOCSPGRP, TIOCOUTQ, TIOCSTI, TIOCGWINSZ, TIOCSWINSZ, TIOCMGET,
	TIOCMBIS, TIOCMBIC, TIOCMSET, TIOCGSOFTCAR, TIOCSSOFTCAR, FIONREAD,
	TIOCLINUX, TIOCGSERIAL, TIOCSSERIAL, TIOCPKT, FIONBIO, TIOCNOTTY,
	TIOCSETD, TIOCGETD, TCSBRKP, TIOCSBRK, TIOCCBRK, TIOCGSID,
	TCGETS2, TCSETS2, TCSETSW2, TCSETSF2, TIOCGRS485, TIOCSRS485,
	TIOCGPTN, TIOCSPTLCK, TIOCGDEV, TCGETX, TCSETX, TCSETXF, TCSETXW,
	TIOCSIG, TIOCGPKT, TIOCGPTLCK, TIOCGEXCL, TIOCGPTPEER, TIOCGISO7816,
	TIOCSISO7816, FIONCLEX, FIOCLEX, FIOASYNC, TIOCSERGWILD, TIOCSERSWILD,
	TIOCGLCKTRMIOS, TIOCSLCKTRMIOS, TIOCSERGSTRUCT, TIOCSERGETLSR,
	TIOCSERGETMULTI, TIOCSERSETMULTI, TIOCGICOUNT, FIOQSIZE,
};

static const unsigned long int_vals[] = {
	0, 1, 2, 3, 4, 5, 0x7fffffff, 0x80000000, 0xffffffff, 0xfffffff0,
	0x100, 0xfff,
};

static unsigned int pick_req(void)
{
	unsigned int r = rnd() % 100, req;

	if (r < 40)
		req = 0x5401 + rnd() % (0x5460 - 0x5401 + 1);
	else if (r < 88)
		req = known_req[rnd() % (sizeof(known_req) / sizeof(known_req[0]))];
	else
		/* any 'T' request: direction, size and number at random */
		req = _IOC(rnd() % 4, 'T', rnd() % 256, rnd() % 128);
	return req;
}

static uint32_t fnv(const unsigned char *p, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ *p++) * 16777619u;
	return h;
}

int main(int argc, char **argv)
{
	unsigned char *pages, *buf, *edge, *unmapped;
	struct termios2 saved;
	struct winsize saved_ws;
	char *out, *o;
	unsigned long arg;
	int fd, i, n, status, mctrl, restores = 0, skipped = 0, one = 1, zero = 0;
	pid_t pid;

	if (argc != 3 || (n = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: ioctlfuzz SEED N\n");
		return 2;
	}
	rng = strtoul(argv[1], NULL, 0) * 2654435761u + 1;
	if (!rng)
		rng = 1;
	out = malloc((size_t)(n + n / RESTORE_EVERY + 2) * LINE);
	/* page 0: the buffer; page 1: ends at the edge; page 2: unmapped */
	pages = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!out || pages == MAP_FAILED || munmap(pages + 2 * PAGE, PAGE))
		return 1;
	buf = pages;
	edge = pages + 2 * PAGE - 2;
	unmapped = pages + 2 * PAGE;

	/* FIOASYNC makes the shell's foreground group (this one) the owner */
	signal(SIGIO, SIG_IGN);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid > 0) {
		if (waitpid(pid, &status, 0) < 0)
			return 1;
		return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}

	/* the child: a session of its own, nothing the shell's session owns */
	setsid();
	signal(SIGHUP, SIG_IGN);
	signal(SIGTTOU, SIG_IGN);
	fd = open(TTY_PATH, O_RDWR | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 || syscall(SYS_ioctl, fd, TCGETS2, &saved) < 0 ||
	    syscall(SYS_ioctl, fd, TIOCGWINSZ, &saved_ws) < 0 ||
	    syscall(SYS_ioctl, fd, TIOCMGET, &mctrl) < 0) {
		perror("ioctlfuzz: " TTY_PATH);
		_exit(1);
	}
	/* the shell's output (the command's echo) out first: TIOCOUTQ is 0 */
	syscall(SYS_ioctl, fd, TCSBRK, 1);

	o = out;
	for (i = 1; i <= n; i++) {
		unsigned int req = pick_req();
		enum kind k;
		long ret;
		int err, with_buf = 0, j;

		while (skipped_req(req)) {
			skipped++;
			req = pick_req();
		}
		k = rnd() % NKINDS;
		if (one_sided(req) && k > K_KERN)
			k = rnd() % (K_KERN + 1);
		if (int_arg(req) && k != K_INT && k != K_NULL)
			k = K_INT;
		switch (k) {
		case K_NULL:
			arg = 0;
			break;
		case K_UNMAP:
			arg = (unsigned long)unmapped;
			break;
		case K_KERN:
			arg = 0xc0000000ul;
			break;
		case K_EDGE:
			edge[0] = rnd();
			edge[1] = rnd();
			arg = (unsigned long)edge;
			with_buf = 2;
			break;
		case K_BUF:
			for (j = 0; j < 512; j++)
				buf[j] = rnd();
			memset(buf + 512, 0, PAGE - 512);
			arg = (unsigned long)buf;
			with_buf = 512;
			break;
		case K_MUT:
			memset(buf, 0, PAGE);
			memcpy(buf, &saved, sizeof(saved));
			for (j = 1 + rnd() % 3; j > 0; j--)
				buf[rnd() % sizeof(saved)] ^= 1 << (rnd() % 8);
			arg = (unsigned long)buf;
			with_buf = 512;
			break;
		default:
			arg = int_vals[rnd() % (sizeof(int_vals) / sizeof(int_vals[0]))];
			break;
		}
		if (req == TCSBRKP && arg > 2)
			arg = rnd() % 3;
		if (req == TIOCSCTTY)
			arg = 0;
		if ((req == TIOCMSET || req == TIOCMBIS) && with_buf == 512)
			*(int *)buf &= ~TIOCM_LOOP;
		errno = 0;
		ret = syscall(SYS_ioctl, fd, req, arg);
		err = ret < 0 ? errno : 0;
		if (ret >= 0 && with_buf && req != TIOCGICOUNT)
			o += sprintf(o, "ioctlfuzz: %d %#x %s %ld %d %08x\n", i, req,
				     kind_name[k], ret, err,
				     fnv(with_buf == 2 ? edge : buf, with_buf));
		else
			o += sprintf(o, "ioctlfuzz: %d %#x %s %ld %d -\n", i, req,
				     kind_name[k], ret, err);
		if (i % RESTORE_EVERY == 0 || i == n) {
			/* back to a usable line; the results are not compared */
			syscall(SYS_ioctl, fd, TIOCCBRK, 0);
			syscall(SYS_ioctl, fd, TCXONC, TCOON);
			syscall(SYS_ioctl, fd, TIOCNXCL, 0);
			syscall(SYS_ioctl, fd, TIOCMSET, &mctrl);
			syscall(SYS_ioctl, fd, TIOCSWINSZ, &saved_ws);
			syscall(SYS_ioctl, fd, TCSETS2, &saved);
			syscall(SYS_ioctl, fd, FIONBIO, &one);
			syscall(SYS_ioctl, fd, FIOASYNC, &zero);
			syscall(SYS_ioctl, fd, TCFLSH, TCIOFLUSH);
			restores++;
			o += sprintf(o, "ioctlfuzz: %d restore\n", i);
		}
	}
	o += sprintf(o, "ioctlfuzz: done calls %d restores %d skipped %d\n",
		     n, restores, skipped);
	fflush(stdout);
	if (write(1, out, o - out) != o - out)
		_exit(1);
	close(fd);
	_exit(0);
}
