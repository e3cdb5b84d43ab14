// SPDX-License-Identifier: GPL-2.0
/*
 * mtt - minitty terminal tester: the guest side of the differential suite
 * (tests/diff/).  It interprets a small op language given on its command
 * line, runs the ops against the serial line it was started on (stdin,
 * /dev/ttyAMA0), records what every call returned, restores the line and
 * prints the record in-band, framed and hex-encoded:
 *
 *     @@MTT-REPORT <hex of the record text> @@END
 *
 * Usage:  mtt 'OPS'        ops as text
 *         mtt x:HEX        ops hex-encoded (what the host driver sends)
 *
 * OPS is a list of ops separated by ';'.  An op is words separated by
 * blanks; a word may be a "quoted string" with C escapes (\n \r \t \e \b
 * \a \f \v \0 \\ \" \xHH).  Numbers are decimal or 0x hex.  The ops:
 *
 *   set ITEMS..          change the working termios (not applied):
 *                        raw, sane (the saved original), std (the
 *                        kernel's tty_std_termios, c_cflag kept), FLAG / -FLAG
 *                        (icanon, echo, ..., xtabs, cs7, b9600), CC=VALUE
 *                        (min=1, erase=^H, eol=0x2c, intr=undef),
 *                        speed=N (BOTHER, for TCSETS2)
 *   apply [s|w|f|s2|w2|f2|a]   apply the working termios with TCSETS,
 *                        TCSETSW, TCSETSF, TCSETS2, TCSETSW2, TCSETSF2,
 *                        or TCSETA (termio)
 *   cfg ITEMS..          set ITEMS; apply s
 *   get | get2           TCGETS / TCGETS2, record the fields
 *   sync                 print @@MTT-SYNC<n>@@ (host input for sync n may
 *                        start now)
 *   read N [@PTR]        read(fd, buf, N), record ret/errno and the bytes
 *   write "BYTES" [@PTR] write(fd, BYTES), record ret/errno
 *   writen N @PTR        write(fd, PTR, N) (bad pointer writes)
 *   wseq N               write N bytes i&255, record total
 *   wgen N SEED          write N xorshift32 bytes (seed SEED), record total
 *   rall N TIMEOUT_MS    read until N bytes arrived or a poll timed out;
 *                        record count, fnv1a32, the bytes when N <= 512
 *   ioctl NAME|NUM [ARG..] [@PTR]   an ioctl; see the table below (an
 *                        ARG may be pgrp or sid: this process's own)
 *   poll in|out|inout MS poll the fd, record ret and revents
 *   select r|w|rw MS     select on the fd, record ret and the ready sets
 *   open [nonblock] [rdonly|wronly] [devtty]  open /dev/ttyAMA0 (devtty:
 *                        /dev/tty); it becomes the fd
 *   close                close the current fd, back to fd 0
 *   fd N                 use fd N (0, 1, or one returned by open)
 *   nonblock on|off      fcntl O_NONBLOCK on the current fd (restored at end)
 *   sleep MS             sleep (poll(), watchdog aware)
 *   rtspin MS            spin MS at SCHED_FIFO priority 1: no kernel
 *                        thread (input processing, flip buffer work) runs
 *                        meanwhile, only interrupts (and, after 950 ms of
 *                        each second, RT throttling lets them run 50 ms)
 *   rxwait N [MS]        wait until the line has received N bytes since
 *                        mtt started (TIOCGICOUNT rx, looked at every
 *                        10 ms), then MS more for the line discipline to
 *                        act on them: the next ops follow a send by its
 *                        arrival, not by a time a loaded host misses
 *   kmsg "TEXT"          write TEXT to /dev/kmsg
 *   console "TEXT"       open /dev/console, write TEXT, close
 *   sigs                 record the signals caught so far
 *   waitsig SIG MS       wait until SIG (HUP, CONT, ...) is caught, at most
 *                        MS (ok, or timeout): a signal another process
 *                        sends (a shell's exit) comes when it runs
 *   bg OP                run OP in a child in a new process group (job
 *                        control checks), record its record and signals
 *                        (the child's watchdog ends OP after 3 s)
 *   orphan OP            as bg, but in an orphaned process group (its
 *                        parent exits first; the record says "orphan")
 *   session OP           as bg, but in a new session (setsid(): no
 *                        controlling terminal; the record says "session")
 *   user OP              run OP in a child of the same process group as
 *                        user and group 65534 (nobody: no capabilities),
 *                        record its record (the record says "user")
 *   ignore SIG           ignore signal SIG (TTIN, TTOU, ... as in the
 *                        signal counts), in this process and its children
 *   spawn OP             start OP in a child of the same process group
 *                        and go on at once (a second process on the
 *                        line: a reader blocked while this one changes
 *                        termios); one child at a time
 *   reap                 wait for the spawned child, record its record
 *                        (its watchdog ends OP after 5 s: "(watchdog)")
 *   conread N            open /dev/console, read(N), close; record as read
 *   watchdog S           abort remaining ops after S seconds (default 30;
 *                        a child sends SIGALRM: no POSIX timers needed)
 *   icount0 | icount     TIOCGICOUNT baseline / record the delta
 *   echo "TEXT"          record TEXT (a comment in the report)
 *
 * Bad pointers (@PTR): @null, @one ((void *)1), @unmap (a PROT_NONE page),
 * @kernel (0xc0000000), @ro (a read-only page), @edgeN (the last N bytes,
 * N <= 4096, of a page followed by a PROT_NONE page; byte i of the page is
 * '0' + i % 10, so a copy from there faults after N bytes).
 *
 * mtt catches SIGINT, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGHUP, SIGWINCH,
 * SIGIO, SIGCONT, SIGPIPE without SA_RESTART, so ISIG and job control show
 * as EINTR plus a counted signal instead of killing the test.
 *
 * At the end mtt restarts output (TCXONC TCOON), unlocks the termios if
 * TIOCSLCKTRMIOS locked any (the lock lasts until the last close, and the
 * shell keeps the line open), restores the saved termios
 * with TCSETSF (drain output, drop unread input), the fd flags, the line
 * discipline and the window size, then prints the report.  The record has
 * one line per op: "<n> <op words>: <result>".  Results never contain
 * timings; the ops that wait (read, rall, poll, select, conread, apply
 * w|f|w2|f2, ioctl TCSBRK) end their result with the input point
 * " @in=N": the bytes the line had received (TIOCGICOUNT rx) since mtt
 * started when the call completed ("?" when unknown), which the host
 * turns into the input step after which it completed ("after=sendK").  Uses nothing but the serial device (and /dev/kmsg,
 * /dev/console for the ops that name them).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <asm/termbits.h>
#include <linux/serial.h>

#ifndef TTY_PATH /* the arch's serial port (lib/rootfs.sh: guest_cc) */
#define TTY_PATH "/dev/ttyAMA0"
#endif

/* ---- output record ---------------------------------------------------- */

static char *rec;
static size_t rec_len, rec_cap;

static void rec_add(const char *s, size_t n)
{
	if (rec_len + n + 1 > rec_cap) {
		rec_cap = (rec_len + n + 1) * 2 + 4096;
		rec = realloc(rec, rec_cap);
		if (!rec)
			_exit(99);
	}
	memcpy(rec + rec_len, s, n);
	rec_len += n;
	rec[rec_len] = 0;
}

/* the record of the op being run */
static char cur[8192];
static size_t cur_len;

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (cur_len >= sizeof(cur) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(cur + cur_len, sizeof(cur) - cur_len, fmt, ap);
	va_end(ap);
	if (n > 0)
		cur_len += (size_t)n < sizeof(cur) - cur_len ? (size_t)n
						: sizeof(cur) - cur_len - 1;
}

static void out_bytes(const unsigned char *b, size_t n)
{
	size_t i;

	out("\"");
	for (i = 0; i < n; i++) {
		unsigned char c = b[i];

		if (c == '\\' || c == '"')
			out("\\%c", c);
		else if (c == '\n')
			out("\\n");
		else if (c == '\r')
			out("\\r");
		else if (c == '\t')
			out("\\t");
		else if (c < 0x20 || c >= 0x7f)
			out("\\x%02x", c);
		else
			out("%c", c);
	}
	out("\"");
}

static const struct { int e; const char *n; } errnames[] = {
	{ EPERM, "EPERM" }, { ENOENT, "ENOENT" }, { ESRCH, "ESRCH" },
	{ EINTR, "EINTR" }, { EIO, "EIO" }, { ENXIO, "ENXIO" },
	{ E2BIG, "E2BIG" }, { EBADF, "EBADF" }, { ECHILD, "ECHILD" },
	{ EAGAIN, "EAGAIN" }, { ENOMEM, "ENOMEM" }, { EACCES, "EACCES" },
	{ EFAULT, "EFAULT" }, { EBUSY, "EBUSY" }, { EEXIST, "EEXIST" },
	{ ENODEV, "ENODEV" }, { ENOTDIR, "ENOTDIR" }, { EISDIR, "EISDIR" },
	{ EINVAL, "EINVAL" }, { ENFILE, "ENFILE" }, { EMFILE, "EMFILE" },
	{ ENOTTY, "ENOTTY" }, { EFBIG, "EFBIG" }, { ENOSPC, "ENOSPC" },
	{ ESPIPE, "ESPIPE" }, { EROFS, "EROFS" }, { EPIPE, "EPIPE" },
	{ ERANGE, "ERANGE" }, { ENOSYS, "ENOSYS" },
	{ EOPNOTSUPP, "EOPNOTSUPP" }, { ETIMEDOUT, "ETIMEDOUT" },
};

static void out_ret(long r, int err)
{
	size_t i;

	if (r >= 0) {
		out("r=%ld", r);
		return;
	}
	for (i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
		if (errnames[i].e == err && errnames[i].n[0]) {
			out("e=%s", errnames[i].n);
			return;
		}
	out("e=%d", err);
}

/* ---- signals and watchdog --------------------------------------------- */

static const struct { int sig; const char *name; } sigtab[] = {
	{ SIGINT, "INT" }, { SIGQUIT, "QUIT" }, { SIGTSTP, "TSTP" },
	{ SIGTTIN, "TTIN" }, { SIGTTOU, "TTOU" }, { SIGHUP, "HUP" },
	{ SIGWINCH, "WINCH" }, { SIGIO, "IO" }, { SIGCONT, "CONT" },
	{ SIGPIPE, "PIPE" },
};
#define NSIGTAB (sizeof(sigtab) / sizeof(sigtab[0]))
static volatile sig_atomic_t sigcount[NSIGTAB];
static volatile sig_atomic_t watchdog_fired;

static void on_signal(int sig)
{
	size_t i;

	for (i = 0; i < NSIGTAB; i++)
		if (sigtab[i].sig == sig)
			sigcount[i]++;
}

static void on_alarm(int sig)
{
	(void)sig;
	watchdog_fired = 1;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/*
 * The watchdog is a child that sends SIGALRM after a while: the tiny kernel
 * has no POSIX timers, so no alarm().
 */
static pid_t watchdog_pid;

static void watchdog(unsigned int seconds)
{
	pid_t parent = getpid();

	if (watchdog_pid > 0) {
		kill(watchdog_pid, SIGKILL);
		while (waitpid(watchdog_pid, NULL, 0) < 0 && errno == EINTR)
			;
		watchdog_pid = 0;
	}
	if (!seconds)
		return;
	watchdog_pid = fork();
	if (watchdog_pid == 0) {
		long end = now_ms() + seconds * 1000L;

		while (now_ms() < end)
			poll(NULL, 0, (int)(end - now_ms()));
		kill(parent, SIGALRM);
		_exit(0);
	}
}

static void install_signals(void)
{
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_signal;	/* no SA_RESTART: show EINTR */
	for (i = 0; i < NSIGTAB; i++)
		sigaction(sigtab[i].sig, &sa, NULL);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
}

/* sig_index NAME: NAME's index in sigtab (HUP, CONT, ...), NSIGTAB if none */
static size_t sig_index(const char *name)
{
	size_t i;

	for (i = 0; i < NSIGTAB; i++)
		if (!strcmp(name, sigtab[i].name))
			break;
	return i;
}

static void out_sigs(void)
{
	size_t i;
	int any = 0;

	out("sigs=");
	for (i = 0; i < NSIGTAB; i++)
		if (sigcount[i]) {
			out("%s%s:%d", any ? "," : "", sigtab[i].name,
			    (int)sigcount[i]);
			any = 1;
		}
	if (!any)
		out("none");
}

/* ---- state ------------------------------------------------------------ */

static int fd;				/* the current fd */
static struct termios2 work;		/* working termios */
static int locked;			/* TIOCSLCKTRMIOS called: unlock */
static struct termios saved;		/* the line as we found it */
static int saved_ok, saved_fl0, saved_ldisc = -1, saved_ws_ok;
static struct winsize saved_ws;
static int opened[16], nopened;
static int syncn;
static struct serial_icounter_struct icbase;
static int inbase_ok;			/* rx count at the start (input points) */
static int inbase;
static unsigned char *bad_unmap, *bad_ro, *bad_edge;

static int num(const char *s, long *v);

static void *badptr(const char *w)
{
	if (!strcmp(w, "@null"))
		return NULL;
	if (!strcmp(w, "@one"))
		return (void *)1;
	if (!strcmp(w, "@unmap"))
		return bad_unmap;
	if (!strcmp(w, "@kernel"))
		return (void *)0xc0000000UL;
	if (!strcmp(w, "@ro"))
		return bad_ro;
	if (!strncmp(w, "@edge", 5)) {
		long n;

		if (num(w + 5, &n) || n < 0 || n > 4096)
			return (void *)-1;
		return bad_edge + 4096 - n;
	}
	return (void *)-1;
}

/* ---- the parser -------------------------------------------------------- */

#define MAXW 64
struct word {
	char *s;		/* NUL terminated (may contain NULs if quoted) */
	size_t len;
	int quoted;
};

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Split one op (at *pp, up to ';' outside quotes) into words, decoded
 * into the static arena. */
static char arena[65536];

static int split_op(char **pp, struct word *w, int *nw, char *err)
{
	char *p = *pp, *o = arena, *lim = arena + sizeof(arena) - 4;
	int n = 0;

	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
			p++;
		if (!*p || *p == ';')
			break;
		if (n == MAXW) {
			strcpy(err, "too many words");
			return -1;
		}
		w[n].s = o;
		w[n].quoted = *p == '"';
		if (*p == '"') {
			p++;
			while (*p && *p != '"' && o < lim) {
				int c = (unsigned char)*p++;

				if (c == '\\') {
					c = (unsigned char)*p++;
					switch (c) {
					case 'n': c = '\n'; break;
					case 'r': c = '\r'; break;
					case 't': c = '\t'; break;
					case 'e': c = 27; break;
					case 'b': c = 8; break;
					case 'a': c = 7; break;
					case 'f': c = 12; break;
					case 'v': c = 11; break;
					case '0': c = 0; break;
					case 'x':
						if (hexval(p[0]) < 0 || hexval(p[1]) < 0) {
							strcpy(err, "bad \\x");
							return -1;
						}
						c = hexval(p[0]) * 16 + hexval(p[1]);
						p += 2;
						break;
					case 0:
						strcpy(err, "unterminated string");
						return -1;
					default: break;
					}
				}
				*o++ = (char)c;
			}
			if (*p != '"') {
				strcpy(err, "unterminated string");
				return -1;
			}
			p++;
		} else {
			while (*p && *p != ' ' && *p != '\t' && *p != ';' &&
			       *p != '\n' && *p != '\r' && o < lim)
				*o++ = *p++;
		}
		w[n].len = (size_t)(o - w[n].s);
		*o++ = 0;
		n++;
	}
	if (*p == ';')
		p++;
	*pp = p;
	*nw = n;
	return 0;
}

static int num(const char *s, long *v)
{
	char *e;

	long long ll;

	errno = 0;
	ll = strtoll(s, &e, 0);
	if (errno || !*s || *e || ll < -2147483648LL || ll > 0xffffffffLL)
		return -1;
	*v = (long)ll;	/* 0x80000000 and up wrap: fine for ioctl numbers */
	return 0;
}

/* ---- termios names ----------------------------------------------------- */

enum { FI, FO, FC, FL };
static const struct flagdef {
	const char *name;
	int field;
	unsigned int mask, val;
} flags[] = {
	{ "ignbrk", FI, IGNBRK, IGNBRK }, { "brkint", FI, BRKINT, BRKINT },
	{ "ignpar", FI, IGNPAR, IGNPAR }, { "parmrk", FI, PARMRK, PARMRK },
	{ "inpck", FI, INPCK, INPCK }, { "istrip", FI, ISTRIP, ISTRIP },
	{ "inlcr", FI, INLCR, INLCR }, { "igncr", FI, IGNCR, IGNCR },
	{ "icrnl", FI, ICRNL, ICRNL }, { "iuclc", FI, IUCLC, IUCLC },
	{ "ixon", FI, IXON, IXON }, { "ixany", FI, IXANY, IXANY },
	{ "ixoff", FI, IXOFF, IXOFF }, { "imaxbel", FI, IMAXBEL, IMAXBEL },
	{ "iutf8", FI, IUTF8, IUTF8 },
	{ "opost", FO, OPOST, OPOST }, { "olcuc", FO, OLCUC, OLCUC },
	{ "onlcr", FO, ONLCR, ONLCR }, { "ocrnl", FO, OCRNL, OCRNL },
	{ "onocr", FO, ONOCR, ONOCR }, { "onlret", FO, ONLRET, ONLRET },
	{ "ofill", FO, OFILL, OFILL }, { "ofdel", FO, OFDEL, OFDEL },
	{ "xtabs", FO, TABDLY, XTABS }, { "tab3", FO, TABDLY, TAB3 },
	{ "tab1", FO, TABDLY, TAB1 }, { "tab2", FO, TABDLY, TAB2 },
	{ "tab0", FO, TABDLY, TAB0 }, { "nl1", FO, NLDLY, NL1 },
	{ "cr1", FO, CRDLY, CR1 }, { "cr2", FO, CRDLY, CR2 },
	{ "cr3", FO, CRDLY, CR3 }, { "bs1", FO, BSDLY, BS1 },
	{ "vt1", FO, VTDLY, VT1 }, { "ff1", FO, FFDLY, FF1 },
	{ "b0", FC, CBAUD, B0 }, { "b9600", FC, CBAUD, B9600 }, { "b38400", FC, CBAUD, B38400 },
	{ "b57600", FC, CBAUD, B57600 }, { "b115200", FC, CBAUD, B115200 },
	{ "b0", FC, CBAUD, B0 },
	{ "cs5", FC, CSIZE, CS5 }, { "cs6", FC, CSIZE, CS6 },
	{ "cs7", FC, CSIZE, CS7 }, { "cs8", FC, CSIZE, CS8 },
	{ "cstopb", FC, CSTOPB, CSTOPB }, { "cread", FC, CREAD, CREAD },
	{ "parenb", FC, PARENB, PARENB }, { "parodd", FC, PARODD, PARODD },
	{ "hupcl", FC, HUPCL, HUPCL }, { "clocal", FC, CLOCAL, CLOCAL },
	{ "crtscts", FC, CRTSCTS, CRTSCTS }, { "cmspar", FC, CMSPAR, CMSPAR },
	{ "isig", FL, ISIG, ISIG }, { "icanon", FL, ICANON, ICANON },
	{ "xcase", FL, XCASE, XCASE }, { "echo", FL, ECHO, ECHO },
	{ "echoe", FL, ECHOE, ECHOE }, { "echok", FL, ECHOK, ECHOK },
	{ "echonl", FL, ECHONL, ECHONL }, { "noflsh", FL, NOFLSH, NOFLSH },
	{ "tostop", FL, TOSTOP, TOSTOP }, { "echoctl", FL, ECHOCTL, ECHOCTL },
	{ "echoprt", FL, ECHOPRT, ECHOPRT }, { "echoke", FL, ECHOKE, ECHOKE },
	{ "flusho", FL, FLUSHO, FLUSHO }, { "pendin", FL, PENDIN, PENDIN },
	{ "iexten", FL, IEXTEN, IEXTEN }, { "extproc", FL, EXTPROC, EXTPROC },
};

static const struct { const char *name; int idx; } ccs[] = {
	{ "intr", VINTR }, { "quit", VQUIT }, { "erase", VERASE },
	{ "kill", VKILL }, { "eof", VEOF }, { "time", VTIME },
	{ "min", VMIN }, { "swtc", VSWTC }, { "start", VSTART },
	{ "stop", VSTOP }, { "susp", VSUSP }, { "eol", VEOL },
	{ "reprint", VREPRINT }, { "discard", VDISCARD },
	{ "werase", VWERASE }, { "lnext", VLNEXT }, { "eol2", VEOL2 },
};

static tcflag_t *field(struct termios2 *t, int f)
{
	switch (f) {
	case FI: return &t->c_iflag;
	case FO: return &t->c_oflag;
	case FC: return &t->c_cflag;
	default: return &t->c_lflag;
	}
}

static void make_raw(struct termios2 *t)
{
	t->c_iflag &= ~(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR |
			ICRNL | IXON);
	t->c_oflag &= ~OPOST;
	t->c_lflag &= ~(ECHO | ECHONL | ICANON | ISIG | IEXTEN);
	t->c_cflag &= ~(CSIZE | PARENB);
	t->c_cflag |= CS8;
	t->c_cc[VMIN] = 1;
	t->c_cc[VTIME] = 0;
}

static int set_item(const char *w, char *err)
{
	size_t i;
	const char *eq = strchr(w, '=');
	int neg = 0;

	if (!strcmp(w, "raw")) {
		make_raw(&work);
		return 0;
	}
	if (!strcmp(w, "std")) {
		/* the kernel's tty_std_termios flags and INIT_C_CC; c_cflag
		 * (speed, size) stays what it is */
		static const cc_t init_cc[] = {
			[VINTR] = 3, [VQUIT] = 0x1c, [VERASE] = 0x7f,
			[VKILL] = 0x15, [VEOF] = 4, [VTIME] = 0, [VMIN] = 1,
			[VSTART] = 0x11, [VSTOP] = 0x13, [VSUSP] = 0x1a,
			[VREPRINT] = 0x12, [VDISCARD] = 0x0f,
			[VWERASE] = 0x17, [VLNEXT] = 0x16,
		};

		work.c_iflag = ICRNL | IXON;
		work.c_oflag = OPOST | ONLCR;
		work.c_lflag = ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHOCTL |
			       ECHOKE | IEXTEN;
		memset(work.c_cc, 0, sizeof(work.c_cc));
		memcpy(work.c_cc, init_cc, sizeof(init_cc));
		return 0;
	}
	if (!strcmp(w, "sane")) {
		memcpy(&work, &saved, sizeof(saved));
		return 0;
	}
	if (eq) {
		size_t nl = (size_t)(eq - w);
		const char *v = eq + 1;
		long val;

		if (!strncmp(w, "speed", nl) && nl == 5) {
			if (num(v, &val))
				goto bad;
			work.c_cflag &= ~CBAUD;
			work.c_cflag |= BOTHER;
			work.c_cflag &= ~(CBAUD << IBSHIFT);
			work.c_cflag |= BOTHER << IBSHIFT;
			work.c_ispeed = work.c_ospeed = (speed_t)val;
			return 0;
		}
		for (i = 0; i < sizeof(ccs) / sizeof(ccs[0]); i++) {
			if (strlen(ccs[i].name) != nl ||
			    strncmp(ccs[i].name, w, nl))
				continue;
			if (!strcmp(v, "undef"))
				val = 0;
			else if (v[0] == '^' && v[1] && !v[2])
				val = v[1] == '?' ? 0x7f : (v[1] & 0x1f);
			else if (num(v, &val))
				goto bad;
			work.c_cc[ccs[i].idx] = (cc_t)val;
			return 0;
		}
		goto bad;
	}
	if (*w == '-') {
		neg = 1;
		w++;
	}
	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		if (strcmp(flags[i].name, w))
			continue;
		*field(&work, flags[i].field) &= ~flags[i].mask;
		if (!neg)
			*field(&work, flags[i].field) |= flags[i].val;
		return 0;
	}
bad:
	snprintf(err, 128, "bad termios item '%s'", w);
	return -1;
}

static void out_termios(const struct termios2 *t, int two)
{
	int i;

	out("i=%x o=%x c=%x l=%x line=%d cc=", t->c_iflag, t->c_oflag,
	    t->c_cflag, t->c_lflag, t->c_line);
	for (i = 0; i < NCCS; i++)
		out("%02x", t->c_cc[i]);
	if (two)
		out(" ispeed=%u ospeed=%u", t->c_ispeed, t->c_ospeed);
}

/* ---- ioctls ------------------------------------------------------------ */

enum { A_NONE, A_INT, A_PINT_OUT, A_PINT_IN, A_OUT, A_WINSZ_IN, A_TERMIOS_IN };
static const struct ioc {
	const char *name;
	unsigned long nr;
	int kind;
	size_t size;
} ioctls[] = {
	{ "FIONREAD", FIONREAD, A_PINT_OUT, 0 },
	{ "TIOCINQ", TIOCINQ, A_PINT_OUT, 0 },
	{ "TIOCOUTQ", TIOCOUTQ, A_PINT_OUT, 0 },
	{ "TCFLSH", TCFLSH, A_INT, 0 },
	{ "TCSBRK", TCSBRK, A_INT, 0 },
	{ "TCSBRKP", TCSBRKP, A_INT, 0 },
	{ "TCXONC", TCXONC, A_INT, 0 },
	{ "TIOCMGET", TIOCMGET, A_PINT_OUT, 0 },
	{ "TIOCMSET", TIOCMSET, A_PINT_IN, 0 },
	{ "TIOCMBIS", TIOCMBIS, A_PINT_IN, 0 },
	{ "TIOCMBIC", TIOCMBIC, A_PINT_IN, 0 },
	{ "TIOCGICOUNT", TIOCGICOUNT, A_OUT, sizeof(struct serial_icounter_struct) },
	{ "TIOCGWINSZ", TIOCGWINSZ, A_OUT, sizeof(struct winsize) },
	{ "TIOCSWINSZ", TIOCSWINSZ, A_WINSZ_IN, 0 },
	{ "TIOCGETD", TIOCGETD, A_PINT_OUT, 0 },
	{ "TIOCSETD", TIOCSETD, A_PINT_IN, 0 },
	{ "TIOCSERGETLSR", TIOCSERGETLSR, A_PINT_OUT, 0 },
	{ "TCGETS", TCGETS, A_OUT, sizeof(struct termios) },
	{ "TCGETS2", TCGETS2, A_OUT, sizeof(struct termios2) },
	{ "TCGETA", TCGETA, A_OUT, sizeof(struct termio) },
	{ "TCSETS", TCSETS, A_TERMIOS_IN, 0 },
	{ "TCSETSW", TCSETSW, A_TERMIOS_IN, 0 },
	{ "TCSETSF", TCSETSF, A_TERMIOS_IN, 0 },
	{ "TCSETS2", TCSETS2, A_TERMIOS_IN, 0 },
	{ "TIOCEXCL", TIOCEXCL, A_NONE, 0 },
	{ "TIOCNXCL", TIOCNXCL, A_NONE, 0 },
	{ "TIOCGEXCL", TIOCGEXCL, A_PINT_OUT, 0 },
	{ "TIOCSBRK", TIOCSBRK, A_NONE, 0 },
	{ "TIOCCBRK", TIOCCBRK, A_NONE, 0 },
	{ "TIOCGSERIAL", TIOCGSERIAL, A_OUT, sizeof(struct serial_struct) },
	{ "TIOCGSID", TIOCGSID, A_PINT_OUT, 0 },
	{ "TIOCGPGRP", TIOCGPGRP, A_PINT_OUT, 0 },
	{ "TIOCSCTTY", TIOCSCTTY, A_INT, 0 },
	{ "TIOCSPGRP", TIOCSPGRP, A_PINT_IN, 0 },
	{ "TIOCNOTTY", TIOCNOTTY, A_NONE, 0 },
	{ "TIOCGSOFTCAR", TIOCGSOFTCAR, A_PINT_OUT, 0 },
	{ "TIOCSSOFTCAR", TIOCSSOFTCAR, A_PINT_IN, 0 },
	{ "TIOCSTI", TIOCSTI, A_PINT_IN, 0 },
	{ "FIONBIO", FIONBIO, A_PINT_IN, 0 },
	{ "FIOASYNC", FIOASYNC, A_PINT_IN, 0 },
	{ "TIOCVHANGUP", TIOCVHANGUP, A_NONE, 0 },
	{ "TIOCGPTN", TIOCGPTN, A_PINT_OUT, 0 },
	{ "TIOCGLCKTRMIOS", TIOCGLCKTRMIOS, A_OUT, sizeof(struct termios) },
	{ "TIOCSLCKTRMIOS", TIOCSLCKTRMIOS, A_TERMIOS_IN, 0 },
	{ "TIOCGRS485", TIOCGRS485, A_OUT, sizeof(struct serial_rs485) },
	{ "TIOCGDEV", TIOCGDEV, A_PINT_OUT, 0 },
	{ "TIOCLINUX", TIOCLINUX, A_PINT_IN, 0 },
	{ "TIOCGETD", TIOCGETD, A_PINT_OUT, 0 },
};

/* the fields of the out structs that are worth printing by name */
static void out_struct(const struct ioc *c, const unsigned char *buf)
{
	size_t i;

	if (c->nr == TIOCGWINSZ) {
		const struct winsize *w = (const void *)buf;

		out(" ws=%u,%u,%u,%u", w->ws_row, w->ws_col, w->ws_xpixel,
		    w->ws_ypixel);
		return;
	}
	if (c->nr == TIOCGICOUNT) {
		const struct serial_icounter_struct *s = (const void *)buf;

		/* absolute counters depend on the whole session: icount0 and
		 * icount record deltas */
		(void)s;
		return;
	}
	if (c->nr == TCGETS || c->nr == TCGETS2 || c->nr == TIOCGLCKTRMIOS) {
		struct termios2 t;

		memset(&t, 0, sizeof(t));
		memcpy(&t, buf, c->size);
		out(" ");
		out_termios(&t, c->nr == TCGETS2);
		return;
	}
	out(" data=");
	for (i = 0; i < c->size; i++)
		out("%02x", buf[i]);
}

static void do_ioctl(struct word *w, int nw, char *err)
{
	const struct ioc *c = NULL;
	struct ioc anon;
	size_t i;
	long v = 0, v2 = 0;
	int iv, r, e;
	void *ptr = (void *)-1;
	unsigned char buf[512];
	struct winsize ws;
	int argi = 2;

	for (i = 0; i < sizeof(ioctls) / sizeof(ioctls[0]); i++)
		if (!strcmp(ioctls[i].name, w[1].s))
			c = &ioctls[i];
	if (!c) {
		if (num(w[1].s, &v)) {
			snprintf(err, 128, "unknown ioctl %s", w[1].s);
			return;
		}
		anon.name = "?";
		anon.nr = (unsigned long)v;
		anon.kind = A_INT;
		anon.size = 0;
		c = &anon;
		v = 0;
	}
	if (nw > argi && w[nw - 1].s[0] == '@') {
		ptr = badptr(w[nw - 1].s);
		if (ptr == (void *)-1) {
			snprintf(err, 128, "bad pointer %s", w[nw - 1].s);
			return;
		}
		nw--;
	}
	if (nw > argi && !strcmp(w[argi].s, "pgrp"))
		v = getpgrp();
	else if (nw > argi && !strcmp(w[argi].s, "sid"))
		v = getsid(0);
	else if (nw > argi && num(w[argi].s, &v)) {
		snprintf(err, 128, "bad number %s", w[argi].s);
		return;
	}
	if (nw > argi + 1 && num(w[argi + 1].s, &v2)) {
		snprintf(err, 128, "bad number %s", w[argi + 1].s);
		return;
	}
	memset(buf, 0, sizeof(buf));
	iv = (int)v;
	errno = 0;
	switch (c->kind) {
	case A_NONE:
		r = ioctl(fd, c->nr, ptr != (void *)-1 ? ptr : NULL);
		break;
	case A_INT:
		r = ioctl(fd, c->nr, ptr != (void *)-1 ? (unsigned long)ptr
						       : (unsigned long)v);
		break;
	case A_PINT_IN:
		r = ioctl(fd, c->nr, ptr != (void *)-1 ? ptr : &iv);
		break;
	case A_PINT_OUT:
		iv = 0;
		r = ioctl(fd, c->nr, ptr != (void *)-1 ? ptr : &iv);
		break;
	case A_WINSZ_IN:
		memset(&ws, 0, sizeof(ws));
		ws.ws_row = (unsigned short)v;
		ws.ws_col = (unsigned short)v2;
		r = ioctl(fd, c->nr, ptr != (void *)-1 ? ptr : &ws);
		break;
	case A_TERMIOS_IN:
		if (c->nr == TIOCSLCKTRMIOS)
			locked = 1;
		r = ioctl(fd, c->nr, ptr != (void *)-1 ? ptr : (void *)&work);
		break;
	default: /* A_OUT */
		r = ioctl(fd, c->nr, ptr != (void *)-1 ? ptr : buf);
		break;
	}
	e = errno;
	out_ret(r, e);
	if (r < 0 || ptr != (void *)-1)
		return;
	if (c->kind == A_PINT_OUT) {
		if (c->nr == TIOCGSID || c->nr == TIOCGPGRP)
			out(" v=%s", iv == getsid(0) ? "sid" :
				     iv == getpgrp() ? "pgrp" : "other");
		else
			out(" v=%d", iv);
	} else if (c->kind == A_OUT) {
		out_struct(c, buf);
	}
}

/* ---- helpers ----------------------------------------------------------- */

static uint32_t fnv1a(uint32_t h, const unsigned char *b, size_t n)
{
	while (n--) {
		h ^= *b++;
		h *= 16777619u;
	}
	return h;
}

static uint32_t xs_state;
static unsigned char xs_byte(void)
{
	uint32_t x = xs_state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	xs_state = x;
	return (unsigned char)(x >> 24);
}

/*
 * Sleep with poll(): the tiny kernel's nanosleep is ENOSYS for glibc (no
 * CONFIG_COMPAT_32BIT_TIME).  Returns 0, or the errno of a failing poll.
 */
static int sleep_ms(long ms)
{
	long end = now_ms() + ms;

	while (!watchdog_fired) {
		long left = end - now_ms();

		if (left <= 0)
			break;
		if (poll(NULL, 0, (int)left) < 0 && errno != EINTR)
			return errno;
	}
	return 0;
}

static int write_all(int f, const void *b, size_t n)
{
	const char *p = b;

	while (n) {
		ssize_t r = write(f, p, n);

		if (r < 0 && errno == EINTR && !watchdog_fired)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static void write_gen(long n, int mode, uint32_t seed)
{
	unsigned char buf[1024];
	long total = 0, i = 0;
	int e = 0;

	xs_state = seed ? seed : 1;
	while (total < n) {
		size_t k = 0;
		ssize_t r;

		while (k < sizeof(buf) && i < n)
			buf[k++] = mode ? xs_byte() : (unsigned char)(i & 255), i++;
		{
			size_t off = 0;

			while (off < k) {
				r = write(fd, buf + off, k - off);
				if (r < 0 && errno == EINTR && !watchdog_fired)
					continue;
				if (r <= 0) {
					e = r < 0 ? errno : EIO;
					goto done;
				}
				off += (size_t)r;
				total += r;
			}
		}
	}
done:
	out("n=%ld", total);
	if (e) {
		out(" ");
		out_ret(-1, e);
	}
}

static void read_all(long n, long tmo)
{
	static unsigned char data[512];
	unsigned char buf[4096];
	long total = 0;
	uint32_t h = 2166136261u;
	const char *why = "ok";
	int e = 0;

	while (total < n && !watchdog_fired) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int pr = poll(&p, 1, (int)tmo);
		ssize_t r;
		size_t want;

		if (pr < 0 && errno == EINTR)
			continue;
		if (pr == 0) {
			why = "timeout";
			break;
		}
		want = (size_t)(n - total) < sizeof(buf) ? (size_t)(n - total)
							  : sizeof(buf);
		r = read(fd, buf, want);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0) {
			why = "error";
			e = errno;
			break;
		}
		if (r == 0) {
			why = "eof";
			break;
		}
		if (n <= (long)sizeof(data))
			memcpy(data + total, buf, (size_t)r);
		h = fnv1a(h, buf, (size_t)r);
		total += r;
	}
	if (watchdog_fired)
		why = "watchdog";
	out("n=%ld fnv=%08x %s", total, h, why);
	if (e) {
		out(" ");
		out_ret(-1, e);
	}
	if (n <= (long)sizeof(data)) {
		out(" d=");
		out_bytes(data, (size_t)total);
	}
}

static void out_revents(short ev)
{
	static const struct { short b; const char *n; } t[] = {
		{ POLLIN, "IN" }, { POLLPRI, "PRI" }, { POLLOUT, "OUT" },
		{ POLLERR, "ERR" }, { POLLHUP, "HUP" }, { POLLNVAL, "NVAL" },
		{ POLLRDNORM, "RDNORM" }, { POLLWRNORM, "WRNORM" },
	};
	size_t i;
	int any = 0;

	out(" ev=");
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (ev & t[i].b) {
			out("%s%s", any ? "," : "", t[i].n);
			any = 1;
		}
	if (!any)
		out("0");
}

static void icount(int base)
{
	struct serial_icounter_struct s;
	int r;

	memset(&s, 0, sizeof(s));
	r = ioctl(fd, TIOCGICOUNT, &s);
	out_ret(r, errno);
	if (r < 0)
		return;
	if (base) {
		icbase = s;
		return;
	}
	out(" rx=%d tx=%d frame=%d overrun=%d parity=%d brk=%d buf_overrun=%d"
	    " cts=%d dsr=%d rng=%d dcd=%d",
	    s.rx - icbase.rx, s.tx - icbase.tx, s.frame - icbase.frame,
	    s.overrun - icbase.overrun, s.parity - icbase.parity,
	    s.brk - icbase.brk, s.buf_overrun - icbase.buf_overrun,
	    s.cts - icbase.cts, s.dsr - icbase.dsr, s.rng - icbase.rng,
	    s.dcd - icbase.dcd);
}

/* ---- ops --------------------------------------------------------------- */

static int run_op(struct word *w, int nw, char *err);

/*
 * Start OP in a child whose record comes back through a pipe: with BG 1 to
 * 3, in a new process group, its signals counted and a 3 s watchdog; else
 * in this process group with a 5 s watchdog, which its record mentions
 * when it fired, and with BG 4 as user and group 65534. Returns the
 * child's pid and sets *rfd, or -1 (recorded).
 */
static pid_t child_start(struct word *w, int nw, char *err, int bg, int *rfd)
{
	int p[2];
	pid_t pid;

	if (pipe(p) < 0) {
		out_ret(-1, errno);
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		out_ret(-1, errno);
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		size_t i;

		close(p[0]);
		if (bg == 4) {
			/* drop root: the checks an unprivileged caller meets */
			if (setgid(65534) || setuid(65534))
				_exit(4);
			bg = 0;
		}
		if (bg)
			for (i = 0; i < NSIGTAB; i++)
				sigcount[i] = 0;
		watchdog_pid = 0;
		if (bg == 2) {
			/* the group is orphaned once this parent is gone */
			pid_t parent = getpid(), gc = fork();

			if (gc < 0)
				_exit(3);
			if (gc > 0)
				_exit(0);
			while (getppid() == parent)
				usleep(1000);
		}
		watchdog(bg ? 3 : 5);
		if (bg == 3)
			setsid();
		else if (bg)
			setpgid(0, 0);
		cur_len = 0;
		cur[0] = 0;
		if (run_op(w, nw, err) < 0)
			out("error %s", err);
		if (bg) {
			out(" ");
			out_sigs();
		} else if (watchdog_fired) {
			out(" (watchdog)");
		}
		watchdog(0);
		if (write_all(p[1], cur, cur_len) < 0)
			_exit(2);
		_exit(0);
	}
	close(p[1]);
	*rfd = p[0];
	return pid;
}

/* Read child PID's record from FD, wait for it, record TAG[record]. */
static void child_finish(pid_t pid, int fd, const char *tag)
{
	char buf[4096];
	ssize_t n, tot = 0;
	int st;

	while (tot < (ssize_t)sizeof(buf) - 1) {
		n = read(fd, buf + tot, sizeof(buf) - 1 - (size_t)tot);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		tot += n;
	}
	buf[tot] = 0;
	close(fd);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	out("%s[%s]", tag, buf);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		out(" status=%x", st);
}

/* KIND: 1 bg, 2 orphan, 3 session, 4 user (as child_start's BG) */
static void do_bg(struct word *w, int nw, char *err, int kind)
{
	static const char *const tag[] = {
		"", "bg", "orphan", "session", "user"
	};
	int fd;
	pid_t pid = child_start(w, nw, err, kind, &fd);

	if (pid > 0)
		child_finish(pid, fd, tag[kind]);
}

/* The spawned child: its pid and the read end of its record's pipe. */
static pid_t spawn_pid;
static int spawn_fd = -1;

static void do_spawn(struct word *w, int nw, char *err)
{
	if (spawn_pid > 0) {
		out("error a child is already spawned");
		return;
	}
	spawn_pid = child_start(w, nw, err, 0, &spawn_fd);
	if (spawn_pid > 0)
		out("spawned");
}

static void do_reap(void)
{
	if (spawn_pid <= 0) {
		out("error no child spawned");
		return;
	}
	child_finish(spawn_pid, spawn_fd, "child");
	spawn_pid = 0;
	spawn_fd = -1;
}

/*
 * The input point: how many bytes the line (fd 0) had received since mtt
 * started when a call completed (TIOCGICOUNT rx, counted by the UART
 * driver as bytes arrive, before any line discipline sees them).  The host
 * turns it into the scenario step after which the call completed.
 */
static void out_input_point(void)
{
	struct serial_icounter_struct s;

	if (inbase_ok && ioctl(0, TIOCGICOUNT, &s) == 0)
		out(" @in=%d", s.rx - inbase);
	else
		out(" @in=?");
}

/* The ops whose completion is placed relative to the input: those that
 * wait for input or for output to drain. */
static int waits(struct word *w, int nw)
{
	static const char *const ops[] = {
		"read", "rall", "poll", "select", "conread",
	};
	size_t i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(w[0].s, ops[i]))
			return 1;
	if (!strcmp(w[0].s, "apply") && nw > 1 &&
	    (w[1].s[0] == 'w' || w[1].s[0] == 'f'))
		return 1;		/* TCSETSW/TCSETSF: drain first */
	return !strcmp(w[0].s, "ioctl") && nw > 1 &&
	       !strcmp(w[1].s, "TCSBRK");	/* tcdrain or a break */
}

static int run_op1(struct word *w, int nw, char *err);

/* Run one op; append its result to cur, and the input point to that of an
 * op that waits.  Returns -1 on a syntax error. */
static int run_op(struct word *w, int nw, char *err)
{
	int r = run_op1(w, nw, err);

	if (r == 0 && waits(w, nw))
		out_input_point();
	return r;
}

static int run_op1(struct word *w, int nw, char *err)
{
	const char *op = w[0].s;
	long v = 0, v2 = 0;
	int r, i;
	unsigned char buf[65536];

	if (!strcmp(op, "set") || !strcmp(op, "cfg")) {
		for (i = 1; i < nw; i++)
			if (set_item(w[i].s, err) < 0)
				return -1;
		if (op[0] == 's') {
			out("ok");
			return 0;
		}
		r = ioctl(fd, TCSETS, &work);
		out_ret(r, errno);
		return 0;
	}
	if (!strcmp(op, "apply")) {
		static const struct { const char *n; unsigned long nr; } t[] = {
			{ "s", TCSETS }, { "w", TCSETSW }, { "f", TCSETSF },
			{ "s2", TCSETS2 }, { "w2", TCSETSW2 },
			{ "f2", TCSETSF2 }, { "a", TCSETA },
		};
		const char *m = nw > 1 ? w[1].s : "s";
		size_t k;

		for (k = 0; k < sizeof(t) / sizeof(t[0]); k++)
			if (!strcmp(t[k].n, m))
				break;
		if (k == sizeof(t) / sizeof(t[0])) {
			snprintf(err, 128, "bad apply mode %s", m);
			return -1;
		}
		if (t[k].nr == TCSETA) {
			struct termio tio;

			memset(&tio, 0, sizeof(tio));
			tio.c_iflag = (unsigned short)work.c_iflag;
			tio.c_oflag = (unsigned short)work.c_oflag;
			tio.c_cflag = (unsigned short)work.c_cflag;
			tio.c_lflag = (unsigned short)work.c_lflag;
			tio.c_line = work.c_line;
			memcpy(tio.c_cc, work.c_cc, NCC);
			r = ioctl(fd, TCSETA, &tio);
		} else {
			r = ioctl(fd, t[k].nr, &work);
		}
		out_ret(r, errno);
		return 0;
	}
	if (!strcmp(op, "get") || !strcmp(op, "get2")) {
		struct termios2 t;
		int two = op[3] == '2';

		memset(&t, 0, sizeof(t));
		r = ioctl(fd, two ? TCGETS2 : TCGETS, &t);
		out_ret(r, errno);
		if (r == 0) {
			out(" ");
			out_termios(&t, two);
		}
		return 0;
	}
	if (!strcmp(op, "sync")) {
		char m[32];
		int n = snprintf(m, sizeof(m), "@@MTT-SYNC%d@@", ++syncn);

		r = write_all(1, m, (size_t)n);
		out("%d%s", syncn, r < 0 ? " failed" : "");
		return 0;
	}
	if (!strcmp(op, "read")) {
		void *p = buf;

		if (nw < 2 || num(w[1].s, &v) || v < 0 || v > (long)sizeof(buf))
			goto usage;
		if (nw > 2) {
			p = badptr(w[2].s);
			if (p == (void *)-1)
				goto usage;
		}
		r = (int)read(fd, p, (size_t)v);
		out_ret(r, errno);
		if (r > 0 && p == buf) {
			out(" d=");
			out_bytes(buf, (size_t)r);
		}
		return 0;
	}
	if (!strcmp(op, "write")) {
		const void *p;

		if (nw < 2 || !w[1].quoted)
			goto usage;
		p = w[1].s;
		if (nw > 2) {
			p = badptr(w[2].s);
			if (p == (void *)-1)
				goto usage;
		}
		r = (int)write(fd, p, w[1].len);
		out_ret(r, errno);
		return 0;
	}
	if (!strcmp(op, "writen")) {
		void *p;

		if (nw < 3 || num(w[1].s, &v))
			goto usage;
		p = badptr(w[2].s);
		if (p == (void *)-1)
			goto usage;
		r = (int)write(fd, p, (size_t)v);
		out_ret(r, errno);
		return 0;
	}
	if (!strcmp(op, "wseq") || !strcmp(op, "wgen")) {
		int gen = op[1] == 'g';

		if (nw < 2 + gen || num(w[1].s, &v) || (gen && num(w[2].s, &v2)))
			goto usage;
		write_gen(v, gen, (uint32_t)v2);
		return 0;
	}
	if (!strcmp(op, "rall")) {
		if (nw < 3 || num(w[1].s, &v) || num(w[2].s, &v2))
			goto usage;
		read_all(v, v2);
		return 0;
	}
	if (!strcmp(op, "ioctl")) {
		if (nw < 2)
			goto usage;
		err[0] = 0;
		do_ioctl(w, nw, err);
		return err[0] ? -1 : 0;
	}
	if (!strcmp(op, "poll")) {
		struct pollfd p = { .fd = fd };

		if (nw < 3 || num(w[2].s, &v))
			goto usage;
		if (!strcmp(w[1].s, "in"))
			p.events = POLLIN;
		else if (!strcmp(w[1].s, "out"))
			p.events = POLLOUT;
		else if (!strcmp(w[1].s, "inout"))
			p.events = POLLIN | POLLOUT;
		else
			goto usage;
		r = poll(&p, 1, (int)v);
		out_ret(r, errno);
		if (r >= 0)
			out_revents(p.revents);
		return 0;
	}
	if (!strcmp(op, "select")) {
		fd_set rs, ws;
		struct timeval tv;
		int rd = strchr(w[1].s, 'r') != NULL;
		int wr = nw > 1 && strchr(w[1].s, 'w') != NULL;

		if (nw < 3 || num(w[2].s, &v))
			goto usage;
		FD_ZERO(&rs);
		FD_ZERO(&ws);
		if (rd)
			FD_SET(fd, &rs);
		if (wr)
			FD_SET(fd, &ws);
		tv.tv_sec = v / 1000;
		tv.tv_usec = (v % 1000) * 1000;
		/* _newselect: glibc's select() uses a time64 syscall that
		 * the tiny kernel lacks (ENOSYS) */
#ifdef SYS__newselect
		r = (int)syscall(SYS__newselect, fd + 1, rd ? &rs : NULL,
				 wr ? &ws : NULL, NULL, &tv);
#else
		r = select(fd + 1, rd ? &rs : NULL, wr ? &ws : NULL, NULL, &tv);
#endif
		out_ret(r, errno);
		if (r >= 0)
			out(" rd=%d wr=%d", rd && FD_ISSET(fd, &rs),
			    wr && FD_ISSET(fd, &ws));
		return 0;
	}
	if (!strcmp(op, "open")) {
		int fl = O_RDWR | O_NOCTTY;
		const char *path = TTY_PATH;

		for (i = 1; i < nw; i++) {
			if (!strcmp(w[i].s, "devtty"))
				path = "/dev/tty";
			else if (!strcmp(w[i].s, "nonblock"))
				fl |= O_NONBLOCK;
			else if (!strcmp(w[i].s, "rdonly"))
				fl = (fl & ~O_ACCMODE) | O_RDONLY;
			else if (!strcmp(w[i].s, "wronly"))
				fl = (fl & ~O_ACCMODE) | O_WRONLY;
			else
				goto usage;
		}
		r = open(path, fl);
		out_ret(r < 0 ? -1 : 0, errno);
		if (r >= 0) {
			if (nopened < 16)
				opened[nopened++] = r;
			fd = r;
		}
		return 0;
	}
	if (!strcmp(op, "close")) {
		r = fd > 2 ? close(fd) : 0;
		out_ret(r, errno);
		for (i = 0; i < nopened; i++)
			if (opened[i] == fd)
				opened[i] = -1;
		fd = 0;
		return 0;
	}
	if (!strcmp(op, "fd")) {
		if (nw < 2 || num(w[1].s, &v))
			goto usage;
		if (v >= 3 && v - 3 < nopened)	/* "fd 3" = first opened */
			fd = opened[v - 3];
		else
			fd = (int)v;
		out("ok");
		return 0;
	}
	if (!strcmp(op, "nonblock")) {
		int fl = fcntl(fd, F_GETFL);

		if (nw < 2)
			goto usage;
		if (!strcmp(w[1].s, "on"))
			fl |= O_NONBLOCK;
		else
			fl &= ~O_NONBLOCK;
		r = fcntl(fd, F_SETFL, fl);
		out_ret(r, errno);
		return 0;
	}
	if (!strcmp(op, "sleep")) {
		if (nw < 2 || num(w[1].s, &v))
			goto usage;
		r = sleep_ms(v);
		if (r)
			out_ret(-1, r);
		else
			out("ok");
		return 0;
	}
	if (!strcmp(op, "rtspin")) {
		struct sched_param sp = { .sched_priority = 1 };
		long end;

		if (nw < 2 || num(w[1].s, &v))
			goto usage;
		if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
			out_ret(-1, errno);
			return 0;
		}
		end = now_ms() + v;
		while (now_ms() < end && !watchdog_fired)
			;
		sp.sched_priority = 0;
		if (sched_setscheduler(0, SCHED_OTHER, &sp))
			out_ret(-1, errno);
		else
			out("ok");
		return 0;
	}
	if (!strcmp(op, "rxwait")) {
		struct serial_icounter_struct s;
		long settle = 0;

		if (nw < 2 || nw > 3 || num(w[1].s, &v) ||
		    (nw == 3 && num(w[2].s, &settle)))
			goto usage;
		if (!inbase_ok) {
			out("no icount");
			return 0;
		}
		while (!watchdog_fired) {
			if (ioctl(0, TIOCGICOUNT, &s) < 0) {
				out_ret(-1, errno);
				return 0;
			}
			if (s.rx - inbase >= v)
				break;
			sleep_ms(10);
		}
		sleep_ms(settle);
		out(watchdog_fired ? "(watchdog)" : "ok");
		return 0;
	}
	if (!strcmp(op, "kmsg") || !strcmp(op, "console")) {
		int f;

		if (nw < 2 || !w[1].quoted)
			goto usage;
		f = open(op[0] == 'k' ? "/dev/kmsg" : "/dev/console",
			 O_WRONLY | O_NOCTTY);
		if (f < 0) {
			out("open ");
			out_ret(-1, errno);
			return 0;
		}
		r = (int)write(f, w[1].s, w[1].len);
		out_ret(r, errno);
		close(f);
		return 0;
	}
	if (!strcmp(op, "sigs")) {
		out_sigs();
		return 0;
	}
	if (!strcmp(op, "waitsig")) {
		long end;

		if (nw != 3 || num(w[2].s, &v))
			goto usage;
		i = sig_index(w[1].s);
		if (i == NSIGTAB)
			goto usage;
		end = now_ms() + v;
		while (!sigcount[i] && !watchdog_fired && now_ms() < end)
			poll(NULL, 0, 20);	/* (a signal may land before poll) */
		out(sigcount[i] ? "ok" : "timeout");
		return 0;
	}
	if (!strcmp(op, "spawn")) {
		if (nw < 2)
			goto usage;
		do_spawn(w + 1, nw - 1, err);
		return 0;
	}
	if (!strcmp(op, "reap")) {
		do_reap();
		return 0;
	}
	if (!strcmp(op, "conread")) {
		int f;

		if (nw < 2 || num(w[1].s, &v) || v < 0 || v > (long)sizeof(buf))
			goto usage;
		f = open("/dev/console", O_RDONLY | O_NOCTTY);
		if (f < 0) {
			out("open ");
			out_ret(-1, errno);
			return 0;
		}
		r = (int)read(f, buf, (size_t)v);
		out_ret(r, errno);
		if (r > 0) {
			out(" d=");
			out_bytes(buf, (size_t)r);
		}
		close(f);
		return 0;
	}
	if (!strcmp(op, "bg") || !strcmp(op, "orphan") ||
	    !strcmp(op, "session") || !strcmp(op, "user")) {
		if (nw < 2)
			goto usage;
		do_bg(w + 1, nw - 1, err, op[0] == 'b' ? 1 : op[0] == 'o' ? 2 :
		      op[0] == 's' ? 3 : 4);
		return 0;
	}
	if (!strcmp(op, "ignore")) {
		if (nw != 2)
			goto usage;
		i = sig_index(w[1].s);
		if (i == NSIGTAB)
			goto usage;
		out_ret(signal(sigtab[i].sig, SIG_IGN) == SIG_ERR ? -1 : 0, errno);
		return 0;
	}
	if (!strcmp(op, "watchdog")) {
		if (nw < 2 || num(w[1].s, &v))
			goto usage;
		watchdog((unsigned int)v);
		out("ok");
		return 0;
	}
	if (!strcmp(op, "icount0") || !strcmp(op, "icount")) {
		icount(op[6] == '0');
		return 0;
	}
	if (!strcmp(op, "echo")) {
		for (i = 1; i < nw; i++)
			out("%s%s", i > 1 ? " " : "", w[i].s);
		return 0;
	}
	snprintf(err, 128, "unknown op '%s'", op);
	return -1;
usage:
	snprintf(err, 128, "bad arguments to '%s'", op);
	return -1;
}

/* ---- main -------------------------------------------------------------- */

static void restore(void)
{
	int i;

	watchdog_fired = 0;
	watchdog(5);
	if (spawn_pid > 0) {
		kill(spawn_pid, SIGKILL);
		while (waitpid(spawn_pid, NULL, 0) < 0 && errno == EINTR)
			;
		spawn_pid = 0;
	}
	for (i = 0; i < nopened; i++)
		if (opened[i] >= 0)
			close(opened[i]);
	ioctl(0, TCXONC, TCOON);
	if (locked) {
		/* the lock outlives mtt while the line stays open: unlock */
		struct termios none;

		memset(&none, 0, sizeof(none));
		ioctl(0, TIOCSLCKTRMIOS, &none);
	}
	if (saved_ok)
		ioctl(0, TCSETSF, &saved);
	if (saved_ldisc >= 0) {
		int cur_ldisc = -1;

		if (ioctl(0, TIOCGETD, &cur_ldisc) == 0 &&
		    cur_ldisc != saved_ldisc)
			ioctl(0, TIOCSETD, &saved_ldisc);
	}
	if (saved_ws_ok)
		ioctl(0, TIOCSWINSZ, &saved_ws);
	if (saved_fl0 >= 0)
		fcntl(0, F_SETFL, saved_fl0);
	watchdog(0);
}

static void report(void)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, n = 0;
	char *o = malloc(rec_len * 2 + 64);

	if (!o)
		_exit(98);
	n += (size_t)sprintf(o, "@@MTT-REPORT ");
	for (i = 0; i < rec_len; i++) {
		o[n++] = hex[(unsigned char)rec[i] >> 4];
		o[n++] = hex[(unsigned char)rec[i] & 15];
	}
	n += (size_t)sprintf(o + n, " @@END\n");
	if (write_all(1, o, n) < 0) {
		/* the line may have been hung up: a new open works */
		int f = open(TTY_PATH, O_RDWR | O_NOCTTY);

		if (f >= 0) {
			write_all(f, o, n);
			close(f);
		}
	}
	free(o);
}

int main(int argc, char **argv)
{
	char *prog, *p, err[160];
	struct word w[MAXW];
	int nw, n = 0, more;
	size_t i;

	if (argc != 2) {
		fprintf(stderr, "usage: mtt 'OPS' | mtt x:HEX\n");
		return 2;
	}
	prog = argv[1];
	if (!strncmp(prog, "x:", 2)) {
		size_t l = strlen(prog + 2) / 2;
		char *d = malloc(l + 1);

		for (i = 0; i < l; i++) {
			int a = hexval(prog[2 + 2 * i]), b = hexval(prog[3 + 2 * i]);

			if (a < 0 || b < 0) {
				fprintf(stderr, "mtt: bad hex\n");
				return 2;
			}
			d[i] = (char)(a * 16 + b);
		}
		d[l] = 0;
		prog = d;
	}

	/* a page that stays reserved and inaccessible (a munmap'ed one could
	 * be reused by a later allocation) */
	bad_unmap = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	bad_ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bad_edge = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (i = 0; i < 4096; i++)
		bad_edge[i] = (unsigned char)('0' + i % 10);
	mprotect(bad_edge + 4096, 4096, PROT_NONE);

	install_signals();
	saved_fl0 = fcntl(0, F_GETFL);
	saved_ok = ioctl(0, TCGETS, &saved) == 0;
	if (ioctl(0, TIOCGETD, &saved_ldisc) < 0)
		saved_ldisc = -1;
	saved_ws_ok = ioctl(0, TIOCGWINSZ, &saved_ws) == 0;
	{
		struct serial_icounter_struct s = { 0 };

		inbase_ok = ioctl(0, TIOCGICOUNT, &s) == 0;
		inbase = s.rx;
	}
	memset(&work, 0, sizeof(work));
	if (ioctl(0, TCGETS2, &work) < 0)
		memcpy(&work, &saved, sizeof(saved));
	fd = 0;
	watchdog(30);

	rec_add("mtt 1\n", 6);
	if (!saved_ok)
		rec_add("start: TCGETS failed\n", 21);
	p = prog;
	do {
		char *start = p, text[200];
		size_t tl;

		/* keep the op's source text for the record (before split) */
		while (*start == ' ' || *start == '\t')
			start++;
		for (tl = 0; start[tl] && tl < sizeof(text) - 1; tl++) {
			if (start[tl] == ';')
				break;
			if (start[tl] == '"') {	/* skip quoted */
				text[tl] = start[tl];
				for (tl++; start[tl] && start[tl] != '"' &&
				     tl < sizeof(text) - 2; tl++) {
					text[tl] = start[tl];
					if (start[tl] == '\\' && start[tl + 1]) {
						tl++;
						text[tl] = start[tl];
					}
				}
				if (!start[tl] || tl >= sizeof(text) - 2)
					break;
			}
			text[tl] = start[tl];
		}
		while (tl && (text[tl - 1] == ' ' || text[tl - 1] == '\t'))
			tl--;
		text[tl] = 0;

		more = split_op(&p, w, &nw, err);
		if (more < 0) {
			char m[256];
			int k = snprintf(m, sizeof(m), "ERROR parse: %s\n", err);

			rec_add(m, (size_t)k);
			break;
		}
		if (nw == 0)
			continue;
		n++;
		cur_len = 0;
		cur[0] = 0;
		if (watchdog_fired) {
			out("skipped (watchdog)");
		} else {
			err[0] = 0;
			if (run_op(w, nw, err) < 0) {
				cur_len = 0;
				out("ERROR %s", err);
			}
		}
		{
			char head[240];
			int k = snprintf(head, sizeof(head), "%d %s: ", n, text);

			rec_add(head, (size_t)k);
			rec_add(cur, cur_len);
			rec_add("\n", 1);
		}
		if (!strncmp(cur, "ERROR", 5))
			break;
	} while (*p);

	cur_len = 0;
	cur[0] = 0;
	out("end ");
	out_sigs();
	if (watchdog_fired)
		out(" watchdog");
	out("\n");
	rec_add(cur, cur_len);
	restore();
	report();
	return 0;
}
