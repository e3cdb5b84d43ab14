// SPDX-License-Identifier: GPL-2.0
/*
 * nullsink - the floor of `minitty bench`'s host-to-guest figures: how
 * long N bytes take to reach the guest when nothing at all is done with
 * them. It puts its standard input, the serial port, under N_NULL (the
 * full layer's line discipline that drops what it gets: no reader, no
 * copy, no processing), waits until the UART driver has counted N more
 * received bytes (TIOCGICOUNT, polled every millisecond), and puts N_TTY
 * back. What is left of the transfer's time is QEMU's serial model, the
 * UART driver and the flip buffer's hand-over: no TTY layer goes much
 * below it. floor_root() in
 * lib/bench/guestbench.py compiles it into the floor boots' initramfs, of
 * the full layer (N_NULL, drivers/tty/n_null.c, comes with CONFIG_TTY).
 *
 *     nullsink N
 *
 * Under N_NULL the port takes no write(): it says "@@NS-READY" through
 * /dev/kmsg (the console writes it to the port, as every kernel message),
 * after which the host sends the N bytes. Once they are counted, and N_TTY
 * is back: "@@NS-DONE GOT" on its standard output, GOT the bytes counted
 * (N, or fewer when none came for 10 s). On an error: "nullsink: error:
 * ..." and exit 1; exit 2 when fewer than N came.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/serial.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#ifndef N_NULL
#define N_NULL 27
#endif

static int fail(const char *what)
{
	printf("nullsink: error: %s: %s\n", what, strerror(errno));
	return 1;
}

static unsigned long received(void)
{
	struct serial_icounter_struct ic;

	if (ioctl(0, TIOCGICOUNT, &ic))
		return (unsigned long)-1;
	return ic.rx;
}

int main(int argc, char **argv)
{
	static const char ready[] = "<0>@@NS-READY\n";
	const struct timespec ms = { 0, 1000000 };
	unsigned long n, start, got = 0, last = 0;
	int ldisc = N_NULL, kmsg, idle = 0;
	char *end;

	n = argc == 2 ? strtoul(argv[1], &end, 0) : 0;
	if (!n || *end) {
		fprintf(stderr, "usage: nullsink N\n");
		return 1;
	}
	kmsg = open("/dev/kmsg", O_WRONLY);
	if (kmsg < 0)
		return fail("/dev/kmsg");
	start = received();
	if (start == (unsigned long)-1)
		return fail("TIOCGICOUNT");
	if (ioctl(0, TIOCSETD, &ldisc))
		return fail("TIOCSETD N_NULL");
	if (write(kmsg, ready, sizeof(ready) - 1) < 0) {
		int e = errno;

		ldisc = N_TTY;
		ioctl(0, TIOCSETD, &ldisc);
		errno = e;
		return fail("/dev/kmsg");
	}
	/* 10 s without a byte ends the wait: bytes were lost on the way */
	while (got < n && idle < 10000) {
		unsigned long now;

		nanosleep(&ms, NULL);
		now = received();
		if (now == (unsigned long)-1)
			break;
		got = now - start;
		idle = got == last ? idle + 1 : 0;
		last = got;
	}
	/*
	 * Counted bytes may still wait in the flip buffer: N_TTY would get
	 * them. tty_ioctl() drops them for TCFLSH before it hands the call to
	 * the line discipline, which N_NULL answers with EINVAL.
	 */
	if (ioctl(0, TCFLSH, TCIFLUSH) && errno != EINVAL)
		return fail("TCFLSH");
	ldisc = N_TTY;
	if (ioctl(0, TIOCSETD, &ldisc))
		return fail("TIOCSETD N_TTY");
	printf("@@NS-DONE %lu\n", got);
	return got >= n ? 0 : 2;
}
