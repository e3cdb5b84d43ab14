// SPDX-License-Identifier: GPL-2.0
/*
 * timecheck: the timer calls ordinary programs make (sleep, select and
 * poll timeouts, alarm, interval and POSIX timers), each checked against
 * the guest's CLOCK_MONOTONIC: it must not return before the time asked,
 * and a blocking read must be interrupted by alarm(). One line per call,
 * "NAME ok MS" or "NAME FAIL why"; exit status 1 when one failed.
 *
 * Without CONFIG_COMPAT_32BIT_TIME and CONFIG_POSIX_TIMERS, Debian's armhf
 * glibc gets ENOSYS for most of these and they return at once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/select.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 300

static int failed;
static volatile sig_atomic_t alarms;

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* report NAME: the call returned RET (errno ERR) after ELAPSED ms. */
static void report(const char *name, int ok, const char *why, long long elapsed)
{
	if (ok) {
		printf("%s ok %lld\n", name, elapsed);
	} else {
		printf("%s FAIL %s (after %lld ms)\n", name, why, elapsed);
		failed = 1;
	}
}

static void check_time(const char *name, int ret, int want_ret, long long t0)
{
	long long el = now_ms() - t0;
	char why[96];

	if (ret != want_ret) {
		snprintf(why, sizeof(why), "returned %d, errno %s", ret, strerror(errno));
		report(name, 0, why, el);
	} else if (el < WAIT_MS) {
		report(name, 0, "returned before its timeout", el);
	} else {
		report(name, 1, NULL, el);
	}
}

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

int main(void)
{
	struct timespec ts = { WAIT_MS / 1000, (WAIT_MS % 1000) * 1000000L };
	struct timeval tv = { WAIT_MS / 1000, (WAIT_MS % 1000) * 1000L };
	struct sigaction sa;
	struct itimerval it;
	struct sigevent sev;
	timer_t timer;
	int p[2], ret;
	long long t0;
	char c;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (pipe(p)) {
		perror("pipe");
		return 1;
	}

	t0 = now_ms();
	ret = nanosleep(&ts, NULL);
	check_time("nanosleep", ret, 0, t0);

	t0 = now_ms();
	ret = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
	check_time("clock_nanosleep", ret, 0, t0);

	/* An empty pipe whose writer is open: only the timeout ends these. */
	{
		fd_set rd;

		FD_ZERO(&rd);
		FD_SET(p[0], &rd);
		t0 = now_ms();
		ret = select(p[0] + 1, &rd, NULL, NULL, &tv);
		check_time("select", ret, 0, t0);
	}
	{
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };

		t0 = now_ms();
		ret = poll(&pfd, 1, WAIT_MS);
		check_time("poll", ret, 0, t0);

		t0 = now_ms();
		ret = ppoll(&pfd, 1, &ts, NULL);
		check_time("ppoll", ret, 0, t0);
	}

	/* alarm() interrupts a blocking read (no SA_RESTART). */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	alarms = 0;
	t0 = now_ms();
	alarm(1);
	/* glibc's alarm() returns 0 when setitimer fails: ask the timer. */
	if (getitimer(ITIMER_REAL, &it) ||
	    (!it.it_value.tv_sec && !it.it_value.tv_usec)) {
		report("alarm-interrupts-read", 0, "alarm() armed no timer", now_ms() - t0);
	} else {
		errno = 0;
		ret = read(p[0], &c, 1);
		if (ret == -1 && errno == EINTR && alarms == 1 && now_ms() - t0 >= 1000)
			report("alarm-interrupts-read", 1, NULL, now_ms() - t0);
		else
			report("alarm-interrupts-read", 0, "the read was not interrupted by SIGALRM",
			       now_ms() - t0);
	}

	alarms = 0;
	memset(&it, 0, sizeof(it));
	it.it_value.tv_usec = WAIT_MS * 1000;
	t0 = now_ms();
	if (setitimer(ITIMER_REAL, &it, NULL)) {
		report("setitimer", 0, strerror(errno), now_ms() - t0);
	} else {
		ret = read(p[0], &c, 1);
		if (ret == -1 && errno == EINTR && alarms == 1)
			check_time("setitimer", 0, 0, t0);
		else
			report("setitimer", 0, "the read was not interrupted", now_ms() - t0);
	}

	alarms = 0;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = SIGALRM;
	t0 = now_ms();
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer)) {
		report("timer_create", 0, strerror(errno), now_ms() - t0);
	} else {
		struct itimerspec its = { .it_value = ts };

		timer_settime(timer, 0, &its, NULL);
		ret = read(p[0], &c, 1);
		if (ret == -1 && errno == EINTR && alarms == 1)
			check_time("timer_create", 0, 0, t0);
		else
			report("timer_create", 0, "the read was not interrupted", now_ms() - t0);
		timer_delete(timer);
	}
	return failed;
}
