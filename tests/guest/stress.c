// SPDX-License-Identifier: GPL-2.0
/*
 * stress - four processes on /dev/ttyAMA0 at once while the host floods the
 * line (issue 11, bin/minitty stress).
 *
 *     stress SECONDS SEED
 *
 * Run from the shell on /dev/ttyAMA0. It prints "stress: running", then
 * for SECONDS four processes pick at random (seeded) among: open and close
 * the port, a non-blocking read, a short non-blocking write, a poll, new
 * termios (random input, output and local modes and VMIN/VTIME, ISIG and
 * IXON kept off so that the flood can neither signal nor stop anyone), a
 * flush, TIOCINQ/TIOCOUTQ, TCXONC. Then, echo off, it prints "stress:
 * stop", drains the input until the line has been quiet for a second (the
 * host stops flooding on "stop"), puts the settings back, and prints its
 * counts:
 *
 *     stress: ops N opens N reads N in N writes N polls N termios N errors N
 *
 * errors counts the calls that failed otherwise than EAGAIN or EINTR (with
 * the first of them named); the host checks that it is 0, that the shell
 * still answers and that the serial log is clean.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <asm/termbits.h>

#ifndef TTY_PATH /* the arch's serial port (lib/rootfs.sh: guest_cc) */
#define TTY_PATH "/dev/ttyAMA0"
#endif
#define NPROC 4

struct counts {
	long ops, opens, reads, in, writes, polls, termios, errors;
	char first_error[64];
};

static struct counts *shared;

static unsigned int rnd(unsigned int *s)
{
	*s = *s * 1103515245 + 12345;
	return *s >> 8;
}

static void bad(struct counts *c, const char *what)
{
	if (errno == EAGAIN || errno == EINTR)
		return;
	if (!c->errors++)
		snprintf(c->first_error, sizeof(c->first_error), "%s %s", what,
			 strerror(errno));
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void worker(int id, double end, unsigned int seed)
{
	struct counts *c = &shared[id];
	char buf[256];
	struct termios t;
	struct pollfd p;
	int fd, n, v;

	fd = open(TTY_PATH, O_RDWR | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		bad(c, "open");
	while (fd >= 0 && now() < end) {
		c->ops++;
		switch (rnd(&seed) % 10) {
		case 0:
			close(fd);
			fd = open(TTY_PATH, O_RDWR | O_NOCTTY | O_NONBLOCK);
			c->opens++;
			if (fd < 0)
				bad(c, "open");
			break;
		case 1:
		case 2:
			n = read(fd, buf, 1 + rnd(&seed) % sizeof(buf));
			c->reads++;
			if (n < 0)
				bad(c, "read");
			else
				c->in += n;
			break;
		case 3:
			n = snprintf(buf, sizeof(buf), "<%d:%ld>", id, c->ops);
			if (write(fd, buf, n) < 0)
				bad(c, "write");
			c->writes++;
			break;
		case 4:
			p.fd = fd;
			p.events = POLLIN | POLLOUT;
			if (poll(&p, 1, rnd(&seed) % 20) < 0)
				bad(c, "poll");
			c->polls++;
			break;
		case 5:
		case 6:
			if (ioctl(fd, TCGETS, &t) < 0) {
				bad(c, "TCGETS");
				break;
			}
			t.c_iflag = (t.c_iflag & ~(INLCR | IGNCR | ICRNL | ISTRIP |
						   IUTF8 | IXON)) |
				    (rnd(&seed) & (INLCR | IGNCR | ICRNL | ISTRIP | IUTF8));
			t.c_oflag = (t.c_oflag & ~(OPOST | ONLCR | OCRNL | ONOCR |
						   ONLRET | TABDLY)) |
				    (rnd(&seed) & (OPOST | ONLCR | OCRNL | ONOCR |
						   ONLRET | TABDLY));
			t.c_lflag = (t.c_lflag & ~(ICANON | ECHO | ECHOE | ECHOK |
						   ECHONL | ECHOCTL | ECHOKE |
						   IEXTEN | ISIG)) |
				    (rnd(&seed) & (ICANON | ECHO | ECHOE | ECHOK |
						   ECHONL | ECHOCTL | ECHOKE |
						   IEXTEN));
			t.c_cc[VMIN] = rnd(&seed) % 4;
			t.c_cc[VTIME] = rnd(&seed) % 2;
			v = rnd(&seed) % 3;
			if (ioctl(fd, v == 0 ? TCSETS : v == 1 ? TCSETSW : TCSETSF,
				  &t) < 0)
				bad(c, "TCSETS");
			c->termios++;
			break;
		case 7:
			if (ioctl(fd, TCFLSH, rnd(&seed) % 3) < 0)
				bad(c, "TCFLSH");
			break;
		case 8:
			if (ioctl(fd, rnd(&seed) % 2 ? TIOCINQ : TIOCOUTQ, &v) < 0)
				bad(c, "TIOCINQ");
			break;
		default:
			/* output held briefly: the writers are non-blocking */
			if (ioctl(fd, TCXONC, TCOOFF) < 0)
				bad(c, "TCXONC");
			poll(NULL, 0, rnd(&seed) % 5);
			if (ioctl(fd, TCXONC, TCOON) < 0)
				bad(c, "TCXONC");
			break;
		}
	}
	if (fd >= 0)
		close(fd);
	_exit(0);
}

int main(int argc, char **argv)
{
	struct counts total = { 0 };
	struct termios saved, t;
	struct pollfd p = { .fd = 0, .events = POLLIN };
	char buf[256], *first = NULL;
	double end;
	int i, secs;

	if (argc != 3 || (secs = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: stress SECONDS SEED\n");
		return 2;
	}
	shared = mmap(NULL, NPROC * sizeof(*shared), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED || ioctl(0, TCGETS, &saved) < 0)
		return 1;
	memset(shared, 0, NPROC * sizeof(*shared));
	/* the flood neither signals (n_tty's ISIG) nor stops output (IXON) */
	t = saved;
	t.c_lflag &= ~ISIG;
	t.c_iflag &= ~IXON;
	if (ioctl(0, TCSETS, &t) < 0)
		return 1;
	printf("stress: running\n");
	fflush(stdout);
	end = now() + secs;
	for (i = 0; i < NPROC; i++)
		if (fork() == 0)
			worker(i, end, strtoul(argv[2], NULL, 0) * 7919 + i);
	for (i = 0; i < NPROC; i++)
		wait(NULL);

	/*
	 * Output on, no echo (it would cut into the marker), still no
	 * signals; drain the input until the line is quiet, then the line
	 * as it was. Non-canonical meanwhile: in canonical mode poll() does
	 * not see a partial line, which the shell would read afterwards.
	 */
	ioctl(0, TCXONC, TCOON);
	t.c_lflag &= ~(ECHO | ICANON);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	ioctl(0, TCSETS, &t);
	printf("\nstress: stop\n");
	fflush(stdout);
	fcntl(0, F_SETFL, O_NONBLOCK);
	do {
		ioctl(0, TCFLSH, TCIFLUSH);
		while (read(0, buf, sizeof(buf)) > 0)
			;
	} while (poll(&p, 1, 1000) > 0);
	fcntl(0, F_SETFL, 0);
	ioctl(0, TCSETS, &saved);

	for (i = 0; i < NPROC; i++) {
		total.ops += shared[i].ops;
		total.opens += shared[i].opens;
		total.reads += shared[i].reads;
		total.in += shared[i].in;
		total.writes += shared[i].writes;
		total.polls += shared[i].polls;
		total.termios += shared[i].termios;
		total.errors += shared[i].errors;
		if (!first && shared[i].errors)
			first = shared[i].first_error;
	}
	printf("stress: ops %ld opens %ld reads %ld in %ld writes %ld polls %ld termios %ld errors %ld%s%s\n",
	       total.ops, total.opens, total.reads, total.in, total.writes,
	       total.polls, total.termios, total.errors, first ? " first " : "",
	       first ? first : "");
	return total.errors != 0;
}
