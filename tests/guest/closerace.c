// SPDX-License-Identifier: GPL-2.0
/*
 * closerace - open a serial port again while its last close waits for the
 * output to drain (issue 11, tests/suites/port).
 *
 * Run as `exec closerace` from the shell on /dev/ttyAMA0 of a guest whose
 * init does not hold /dev/console (minitty.initio=null): its fds 0-2 are
 * then the only open file of the port. It holds the output (TCXONC TCOOFF),
 * writes a line, and closes the port: the close waits up to closing_wait
 * (30 s) for the held output. Meanwhile a child that holds none of its
 * files opens the port again, restarts the output and writes two lines,
 * one second apart, so that the second comes after the close went on.
 * The child prints on the port what open and the writes returned:
 *
 *     closerace: reopen 0 write 17 write 18
 *
 * The host checks that line and the serial log (no Oops).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <asm/termbits.h>

#ifndef TTY_PATH /* the arch's serial port (lib/rootfs.sh: guest_cc) */
#define TTY_PATH "/dev/ttyAMA0"
#endif

static void to_null(void)
{
	int nul = open("/dev/null", O_RDWR);

	dup2(nul, 0);
	dup2(nul, 1);
	dup2(nul, 2);
	if (nul > 2)
		close(nul);
}

static long do_write(int fd, const char *s)
{
	ssize_t r = write(fd, s, strlen(s));

	return r < 0 ? -errno : r;
}

int main(void)
{
	int p[2], fd, st;
	long w1, w2;
	char c, msg[128];
	pid_t pid;

	if (pipe(p) < 0)
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		/* the reopener: none of the closer's files */
		to_null();
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(1);
		/* the closer is in its close, held there by the output */
		poll(NULL, 0, 1000);
		fd = open(TTY_PATH, O_RDWR | O_NOCTTY);
		if (fd < 0)
			_exit(1);
		ioctl(fd, TCXONC, TCOON);
		w1 = do_write(fd, "closerace: first\n");
		/* the held output drains: the close goes on */
		poll(NULL, 0, 1000);
		w2 = do_write(fd, "closerace: second\n");
		snprintf(msg, sizeof(msg), "closerace: reopen 0 write %ld write %ld\n",
			 w1, w2);
		do_write(fd, msg);
		ioctl(fd, TCSBRK, 1);
		close(fd);
		_exit(0);
	}
	close(p[0]);
	ioctl(1, TCXONC, TCOOFF);
	do_write(1, "closerace: held\n");
	if (write(p[1], "x", 1) != 1)
		return 1;
	/* the last close of the port: waits for the held output */
	to_null();
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return 0;
}
