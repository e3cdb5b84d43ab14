// SPDX-License-Identifier: GPL-2.0
/*
 * unbind - remove the serial port while files are open and processes are
 * blocked on it, then add it again (issue 11, tests/suites/port, stress).
 *
 *     unbind [CYCLES]
 *
 * Run from the shell on /dev/ttyAMA0. It goes to the background in a
 * session of its own (the shell gets its prompt back) and, CYCLES times
 * (default 1): opens the port in four processes, blocked in read(), in a
 * write() with the output held (TCXONC TCOOFF) and the TX buffer full, in
 * poll() and in TIOCMIWAIT; unbinds the PL011 from its driver through
 * sysfs, which removes the port; checks what each blocked call returned
 * and what read, write, poll, an ioctl and close then return on the open
 * file, as for a hung up tty (tty_io.c: hung_up_tty_fops); checks that a
 * new open fails; binds the PL011 again. The console being the port, it
 * is silent meanwhile; at the end it opens the new port, waits for the
 * shell that init starts on it, and prints the lines of the first cycle,
 * those of any cycle that failed, and the verdict:
 *
 *     unbind: cycle 1 reader blocked 0 read 0 write EIO ... ok
 *     unbind: result ok cycles 1
 *
 * "FAIL" in place of "ok" names what differed. The host checks the
 * verdict, that the shell on the new port works, and the serial log.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <dirent.h>
#include <asm/termbits.h>

#ifndef TTY_PATH /* the arch's serial port (lib/rootfs.sh: guest_cc) */
#define TTY_PATH "/dev/ttyAMA0"
#endif
#define DRIVER "/sys/bus/amba/drivers/uart-pl011"
#define MAX_CYCLES 1000
#define HUNG_POLL (POLLIN | POLLOUT | POLLERR | POLLHUP | POLLRDNORM | \
		   POLLWRNORM)

enum { READER, WRITER, POLLER, MIWAIT, NKIDS };
static const char *const kid_name[NKIDS] = {
	"reader", "writer", "poller", "miwait"
};

static char report[MAX_CYCLES > 50 ? 50 * 256 : MAX_CYCLES * 256];
static int failed;

static void say(const char *fmt, ...)
{
	size_t len = strlen(report);
	va_list ap;

	va_start(ap, fmt);
	if (len < sizeof(report) - 1)
		vsnprintf(report + len, sizeof(report) - len, fmt, ap);
	va_end(ap);
}

static void to_null(void)
{
	int nul = open("/dev/null", O_RDWR);

	dup2(nul, 0);
	dup2(nul, 1);
	dup2(nul, 2);
	if (nul > 2)
		close(nul);
}

static long ret_of(long r)
{
	return r < 0 ? -errno : r;
}

/* A name for return value @r; up to 8 of them live at once. */
static const char *err_name(long r)
{
	static char bufs[8][16];
	static int next;
	char *buf = bufs[next++ % 8];

	switch (r) {
	case -EIO: return "EIO";
	case -EINTR: return "EINTR";
	case -EAGAIN: return "EAGAIN";
	case -ENODEV: return "ENODEV";
	case -ENOENT: return "ENOENT";
	case -ENXIO: return "ENXIO";
	case -ENOTTY: return "ENOTTY";
	}
	snprintf(buf, sizeof(bufs[0]), "%ld", r);
	return buf;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t r;

	if (fd < 0)
		return -errno;
	r = write(fd, s, strlen(s));
	r = r < 0 ? -errno : 0;
	close(fd);
	return r;
}

/*
 * One blocked process: set up, say so on @ready, block in its call, then
 * write on @res what the call and the calls after it returned.
 */
static void kid(int which, int ready, int res)
{
	struct pollfd pfd;
	struct termios tio;
	static char buf[4096];
	long blocked, r, w, e;
	int fd, p;

	fd = open(TTY_PATH, O_RDWR | O_NOCTTY);
	if (fd < 0)
		_exit(1);
	pfd.fd = fd;
	switch (which) {
	case WRITER:
		/* output held, TX buffer filled: the next write() blocks */
		if (ioctl(fd, TCXONC, TCOOFF) < 0 ||
		    fcntl(fd, F_SETFL, O_NONBLOCK) < 0)
			_exit(1);
		memset(buf, 'x', sizeof(buf));
		while (write(fd, buf, sizeof(buf)) > 0)
			;
		if (errno != EAGAIN || fcntl(fd, F_SETFL, 0) < 0)
			_exit(1);
		break;
	}
	if (write(ready, "x", 1) != 1)
		_exit(1);
	switch (which) {
	case READER:
		blocked = ret_of(read(fd, buf, sizeof(buf)));
		break;
	case WRITER:
		blocked = ret_of(write(fd, buf, 100));
		break;
	case POLLER:
		pfd.events = POLLIN | POLLRDNORM | POLLPRI;
		blocked = ret_of(poll(&pfd, 1, -1));
		if (blocked > 0)
			blocked = pfd.revents;
		break;
	default:
		blocked = ret_of(ioctl(fd, TIOCMIWAIT,
				       TIOCM_CTS | TIOCM_CD | TIOCM_DSR | TIOCM_RNG));
		break;
	}
	/* the hung up file */
	r = ret_of(read(fd, buf, 10));
	w = ret_of(write(fd, "y", 1));
	pfd.events = HUNG_POLL | POLLPRI;
	p = poll(&pfd, 1, 0) == 1 ? pfd.revents : -1;
	e = ret_of(ioctl(fd, TCGETS, &tio));
	snprintf(buf, sizeof(buf), "%d %ld %ld %ld %d %ld %ld\n", which,
		 blocked, r, w, p, e, ret_of(close(fd)));
	if (write(res, buf, strlen(buf)) < 0)
		_exit(1);
	_exit(0);
}

/* @v in hexadecimal, for poll masks. */
static const char *hex(long v)
{
	static char buf[16];

	snprintf(buf, sizeof(buf), "%#lx", v);
	return buf;
}

/* What kid @which's blocked call should have returned. */
static int blocked_ok(int which, long v)
{
	switch (which) {
	case READER:
		return v == 0;
	case POLLER:
		return v == (POLLIN | POLLRDNORM | POLLERR | POLLHUP);
	default:
		return v == -EIO;
	}
}

static void cycle(int n, const char *dev)
{
	int ready[2], res[2], i, st, ok, got = 0, bad = 0;
	long v[6];
	int k;
	pid_t pid[NKIDS];
	char c, line[256];
	FILE *in;

	if (pipe(ready) < 0 || pipe(res) < 0)
		exit(1);
	for (i = 0; i < NKIDS; i++) {
		pid[i] = fork();
		if (pid[i] == 0) {
			close(ready[0]);
			close(res[0]);
			kid(i, ready[1], res[1]);
		}
	}
	close(ready[1]);
	close(res[1]);
	for (i = 0; i < NKIDS; i++)
		if (read(ready[0], &c, 1) != 1)
			break;
	if (i < NKIDS) {
		say("unbind: cycle %d FAIL %d of %d processes ready\n", n, i, NKIDS);
		failed = 1;
	}
	close(ready[0]);
	/* let them go to sleep in their calls */
	poll(NULL, 0, 500);

	st = write_file(DRIVER "/unbind", dev);
	if (st)
		say("unbind: cycle %d FAIL unbind %s\n", n, err_name(st));

	/* the results, one line each; a process still blocked gives none */
	in = fdopen(res[0], "r");
	alarm(10);
	while (got < NKIDS && fgets(line, sizeof(line), in)) {
		got++;
		if (sscanf(line, "%d %ld %ld %ld %ld %ld %ld", &k, &v[0], &v[1],
			   &v[2], &v[3], &v[4], &v[5]) != 7 || k < 0 || k >= NKIDS) {
			bad = 1;
			continue;
		}
		/* as hung_up_tty_fops: read 0, write EIO, all of poll, ioctl EIO */
		ok = blocked_ok(k, v[0]) && v[1] == 0 && v[2] == -EIO &&
		     v[3] == HUNG_POLL && v[4] == -EIO && v[5] == 0;
		if (!ok || n == 1)
			say("unbind: cycle %d %s blocked %s read %s write %s poll %#lx ioctl %s close %s %s\n",
			    n, kid_name[k],
			    k == POLLER ? hex(v[0]) : err_name(v[0]), err_name(v[1]),
			    err_name(v[2]), (unsigned long)v[3], err_name(v[4]),
			    err_name(v[5]), ok ? "ok" : "FAIL");
		bad |= !ok;
	}
	alarm(0);
	fclose(in);
	for (i = 0; i < NKIDS; i++)
		kill(pid[i], SIGKILL);
	for (i = 0; i < NKIDS; i++)
		waitpid(pid[i], &st, 0);
	if (got < NKIDS) {
		say("unbind: cycle %d FAIL %d of %d blocked calls returned\n",
		    n, got, NKIDS);
		bad = 1;
	}

	/* no port: a new open fails */
	st = open(TTY_PATH, O_RDWR | O_NOCTTY | O_NONBLOCK);
	if (st >= 0) {
		say("unbind: cycle %d FAIL open without port\n", n);
		close(st);
		bad = 1;
	}
	st = write_file(DRIVER "/bind", dev);
	if (st) {
		say("unbind: cycle %d FAIL bind %s\n", n, err_name(st));
		bad = 1;
	}
	if (bad)
		failed = 1;
}

/*
 * Whether another process has the port as its stdin: the shell that init
 * starts again on the new port. Until then, the last close of the port
 * would drop what the host typed meanwhile.
 */
static int shell_on_port(void)
{
	char path[NAME_MAX + 16], link[64];
	struct dirent *de;
	int found = 0;
	ssize_t n;
	DIR *d;

	d = opendir("/proc");
	while (d && !found && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9' ||
		    atoi(de->d_name) == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%s/fd/0", de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = 0;
			found = !strcmp(link, TTY_PATH);
		}
	}
	if (d)
		closedir(d);
	return found;
}

static void on_alarm(int sig)
{
	(void)sig;
}

int main(int argc, char **argv)
{
	int cycles = argc > 1 ? atoi(argv[1]) : 1, i, fd = -1;
	struct sigaction sa = { .sa_handler = on_alarm };
	char dev[NAME_MAX + 1] = "";
	struct dirent *de;
	DIR *d;

	if (cycles < 1 || cycles > MAX_CYCLES) {
		fprintf(stderr, "usage: unbind [CYCLES (1-%d)]\n", MAX_CYCLES);
		return 2;
	}
	/* the PL011 (QEMU's virt has one): the driver's link to it */
	d = opendir(DRIVER);
	while (d && (de = readdir(d)))
		if (de->d_type == DT_LNK && strcmp(de->d_name, "module"))
			snprintf(dev, sizeof(dev), "%s", de->d_name);
	if (d)
		closedir(d);
	if (!dev[0]) {
		fprintf(stderr, "unbind: no device in %s\n", DRIVER);
		return 1;
	}

	if (fork())
		return 0;
	setsid();
	signal(SIGHUP, SIG_IGN);
	sigaction(SIGALRM, &sa, NULL);
	to_null();
	/* the shell's prompt goes out before the port goes away */
	poll(NULL, 0, 1000);

	for (i = 1; i <= cycles; i++)
		cycle(i, dev);

	/* the new port: the console again */
	for (i = 0; i < 100 && fd < 0; i++) {
		fd = open(TTY_PATH, O_RDWR | O_NOCTTY);
		if (fd < 0)
			poll(NULL, 0, 100);
	}
	if (fd < 0)
		return 1;
	/* a writer that failed to return left the output held */
	ioctl(fd, TCXONC, TCOON);
	say("unbind: result %s cycles %d\n", failed ? "FAIL" : "ok", cycles);
	for (i = 0; i < 300 && !shell_on_port(); i++)
		poll(NULL, 0, 100);
	if (write(fd, report, strlen(report)) < 0)
		return 1;
	ioctl(fd, TCSBRK, 1);
	close(fd);
	return 0;
}
