// SPDX-License-Identifier: GPL-2.0
/*
 * rxfuzz - random bytes in while the termios change at random (issue 11,
 * bin/minitty stress, lib/stress/stress.py).
 *
 *     rxfuzz BYTES SEED [SECONDS]
 *
 * Run from the shell on /dev/ttyAMA0 while the host sends random bytes
 * (every byte value, every control character). It prints "rxfuzz:
 * running", then, until the port has received BYTES more bytes (its
 * TIOCGICOUNT rx count) or SECONDS (default 3600) have passed:
 *
 *   the parent  changes the termios of the line at random (seeded): the
 *               input modes (ISTRIP, INLCR, IGNCR, ICRNL, IXON, IXANY,
 *               IXOFF, PARMRK, IUCLC, IUTF8, ...), the output modes, the
 *               local modes (ICANON, ECHO, ECHOE, ECHOK, ECHONL, ECHOCTL,
 *               ECHOPRT, ECHOKE, ISIG, NOFLSH, IEXTEN), VMIN and VTIME
 *               and, now and then, a control character, with TCSETS,
 *               TCSETSW or TCSETSF; now and then a TCIFLUSH, a tcdrain
 *               (TCSBRK 1) or a TIOCINQ;
 *   2 readers   each on a file of its own, poll() and read() at random
 *               sizes, non-blocking or blocking (the rest of the flood, a
 *               line end, VMIN or a signal ends it).
 *
 * ISIG lets the flood send SIGINT, SIGQUIT and SIGTSTP to the process
 * group: they are caught and counted. Then the parent stops the readers
 * (SIGKILL: a reader stuck in the kernel hangs the run, which the host
 * sees), puts output on, echo and signals off, prints "rxfuzz: stop",
 * drains the input until the line has been quiet for a second (the host
 * stops on "stop"), restores the line as it was and prints:
 *
 *     rxfuzz: rx N termios N reads N in N flushes N drains N signals N waits_cut N errors N end bytes|time
 *
 * rx is the bytes the port received, termios the changes made, in the
 * bytes the readers got, waits_cut the waits for the output to drain
 * that an alarm cut short (output held by a STOP that no START can undo
 * any more: see waiting_ioctl()), errors the calls that failed otherwise than
 * EAGAIN or EINTR (the first one named after it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <asm/termbits.h>
#include <linux/serial.h>

#ifndef TTY_PATH /* the arch's serial port (lib/rootfs.sh: guest_cc) */
#define TTY_PATH "/dev/ttyAMA0"
#endif
#define NREADERS 2

struct counts {
	long termios, reads, in, flushes, drains, signals, waits_cut, errors;
	char first_error[64];
};

static struct counts *shared;

static unsigned int rnd(unsigned int *s)
{
	*s = *s * 1103515245 + 12345;
	return *s >> 8;
}

static void bad(const char *what)
{
	if (errno == EAGAIN || errno == EINTR)
		return;
	if (!__sync_fetch_and_add(&shared->errors, 1))
		snprintf(shared->first_error, sizeof(shared->first_error),
			 "%s %s", what, strerror(errno));
}

static void on_signal(int sig)
{
	__sync_fetch_and_add(&shared->signals, 1);
}

static void on_alarm(int sig)
{
	shared->waits_cut++;
}

/*
 * The calls that wait for the output to drain (TCSETSW, TCSETSF, TCSBRK)
 * under an alarm: output stopped by STOP may never start again when the
 * START that would start it can no longer be received (ISTRIP with a START
 * over 0x7f, a VSTART changed since): the alarm interrupts the wait
 * (EINTR), and a later change turns IXON off, which starts the output.
 */
static int waiting_ioctl(int fd, unsigned long req, void *arg)
{
	int r;

	alarm(1);
	r = ioctl(fd, req, arg);
	alarm(0);
	return r;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long rx_count(int fd)
{
	struct serial_icounter_struct ic;

	if (ioctl(fd, TIOCGICOUNT, &ic) < 0) {
		bad("TIOCGICOUNT");
		return -1;
	}
	return (unsigned int)ic.rx;
}

static void reader(unsigned int seed)
{
	static char buf[4096];
	struct pollfd p;
	int fd, n, fl;

	fd = open(TTY_PATH, O_RDWR | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		bad("open");
		_exit(1);
	}
	p.fd = fd;
	p.events = POLLIN;
	for (;;) {
		if (rnd(&seed) % 4 == 0) {
			/* a blocking read: returns with data, VTIME or a signal */
			fl = fcntl(fd, F_GETFL);
			fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
			n = read(fd, buf, 1 + rnd(&seed) % sizeof(buf));
			fcntl(fd, F_SETFL, fl);
		} else {
			if (poll(&p, 1, rnd(&seed) % 50) < 0)
				bad("poll");
			n = read(fd, buf, 1 + rnd(&seed) % sizeof(buf));
		}
		__sync_fetch_and_add(&shared->reads, 1);
		if (n < 0)
			bad("read");
		else
			__sync_fetch_and_add(&shared->in, n);
	}
}

static void random_termios(int fd, unsigned int *seed)
{
	static const int cc[] = { VINTR, VQUIT, VERASE, VKILL, VEOF, VEOL,
				  VEOL2, VSTART, VSTOP, VSUSP, VWERASE,
				  VLNEXT, VREPRINT };
	const tcflag_t imask = IGNBRK | BRKINT | IGNPAR | PARMRK | INPCK |
			       ISTRIP | INLCR | IGNCR | ICRNL | IUCLC | IXON |
			       IXANY | IXOFF | IMAXBEL | IUTF8;
	const tcflag_t omask = OPOST | OLCUC | ONLCR | OCRNL | ONOCR | ONLRET;
	const tcflag_t lmask = ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHONL |
			       NOFLSH | ECHOCTL | ECHOPRT | ECHOKE | IEXTEN;
	struct termios t;
	int how;

	if (ioctl(fd, TCGETS, &t) < 0) {
		bad("TCGETS");
		return;
	}
	t.c_iflag = (t.c_iflag & ~imask) | (rnd(seed) & imask);
	t.c_oflag = (t.c_oflag & ~omask) | (rnd(seed) & omask);
	t.c_lflag = (t.c_lflag & ~lmask) | (rnd(seed) & lmask);
	t.c_cc[VMIN] = rnd(seed) % 5;
	t.c_cc[VTIME] = rnd(seed) % 3;
	if (rnd(seed) % 8 == 0)
		t.c_cc[cc[rnd(seed) % (sizeof(cc) / sizeof(cc[0]))]] = rnd(seed);
	how = rnd(seed) % 3;
	if (waiting_ioctl(fd, how == 0 ? TCSETS : how == 1 ? TCSETSW : TCSETSF,
			  &t) < 0)
		bad("TCSETS");
	__sync_fetch_and_add(&shared->termios, 1);
}

int main(int argc, char **argv)
{
	struct termios saved, t;
	struct pollfd p = { .fd = 0, .events = POLLIN };
	struct sigaction sa;
	pid_t kids[NREADERS];
	unsigned int seed;
	long want, rx0, rx = 0;
	double end;
	char buf[256];
	int i, v, timed_out = 0;

	if (argc < 3 || argc > 4 || (want = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: rxfuzz BYTES SEED [SECONDS]\n");
		return 2;
	}
	seed = strtoul(argv[2], NULL, 0) * 7919 + 17;
	end = now() + (argc == 4 ? atoi(argv[3]) : 3600);
	shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED || ioctl(0, TCGETS, &saved) < 0)
		return 1;
	memset(shared, 0, sizeof(*shared));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: reads see EINTR */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	sigaction(SIGTSTP, &sa, NULL);
	sigaction(SIGWINCH, &sa, NULL);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	rx0 = rx_count(0);
	if (rx0 < 0)
		return 1;
	printf("rxfuzz: running\n");
	fflush(stdout);
	for (i = 0; i < NREADERS; i++) {
		kids[i] = fork();
		if (kids[i] == 0)
			reader(seed * 31 + i);
	}
	for (;;) {
		rx = rx_count(0) - rx0;
		if (rx >= want)
			break;
		if (now() > end) {
			timed_out = 1;
			break;
		}
		switch (rnd(&seed) % 8) {
		case 0:
			if (ioctl(0, TCFLSH, TCIFLUSH) < 0)
				bad("TCFLSH");
			shared->flushes++;
			break;
		case 1:
			/* tcdrain(): the echo goes out (or IXON holds it) */
			if (rnd(&seed) % 4 == 0) {
				if (waiting_ioctl(0, TCSBRK, (void *)1) < 0)
					bad("TCSBRK");
				shared->drains++;
			} else if (ioctl(0, TIOCINQ, &v) < 0) {
				bad("TIOCINQ");
			}
			break;
		default:
			random_termios(0, &seed);
			break;
		}
		poll(NULL, 0, rnd(&seed) % 10);
	}
	for (i = 0; i < NREADERS; i++)
		kill(kids[i], SIGKILL);
	for (i = 0; i < NREADERS; i++)
		waitpid(kids[i], NULL, 0);

	/*
	 * Output on, no echo, no signals, no flow control: the marker; and
	 * non-canonical for the drain (poll() sees a partial line then).
	 */
	t = saved;
	t.c_lflag &= ~(ECHO | ISIG | ICANON);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	t.c_iflag &= ~(IXON | IXOFF);
	if (ioctl(0, TCSETS, &t) < 0 || ioctl(0, TCXONC, TCOON) < 0)
		bad("TCSETS");
	printf("\nrxfuzz: stop\n");
	fflush(stdout);
	fcntl(0, F_SETFL, O_NONBLOCK);
	do {
		ioctl(0, TCFLSH, TCIFLUSH);
		while (read(0, buf, sizeof(buf)) > 0)
			;
	} while (poll(&p, 1, 1000) > 0);
	fcntl(0, F_SETFL, 0);
	ioctl(0, TCSETS, &saved);
	printf("rxfuzz: rx %ld termios %ld reads %ld in %ld flushes %ld drains %ld signals %ld waits_cut %ld errors %ld end %s%s%s\n",
	       rx, shared->termios, shared->reads, shared->in, shared->flushes,
	       shared->drains, shared->signals, shared->waits_cut, shared->errors,
	       timed_out ? "time" : "bytes",
	       shared->errors ? " first " : "", shared->first_error);
	return shared->errors != 0;
}
