// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_khz: print the rate of this machine's time stamp counter, in kHz.
 *
 * QEMU's TCG gives an x86_64 guest the host's own counter (its rdtsc is
 * the host's), so this is also the rate of the guest's TSC. lib/qemu.sh
 * hands it to x86_64 guests (tsc_early_khz=): calibrating the TSC against
 * the PIT fails in a guest that the loaded host does not run on time, and
 * such a guest kept time with jiffies, which lose ticks under load: its
 * clock fell behind the host's and the timed steps of the tests with it.
 */
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>

struct sample {
	unsigned long long tsc;
	long long ns;
};

static long long ns_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC_RAW, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* The counter and the time around it, from the tightest of 100 tries (a
 * try the host preempted between its two clock reads does not count). */
static struct sample sample(void)
{
	struct sample best = { 0, 0 };
	long long gap = -1;

	for (int i = 0; i < 100; i++) {
		long long a = ns_now();
		unsigned long long t = __rdtsc();
		long long b = ns_now();

		if (gap < 0 || b - a < gap) {
			gap = b - a;
			best.tsc = t;
			best.ns = a + (b - a) / 2;
		}
	}
	return best;
}

int main(void)
{
	struct timespec wait = { 0, 200 * 1000 * 1000 };
	struct sample a, b;

	a = sample();
	nanosleep(&wait, NULL);
	b = sample();
	if (b.ns <= a.ns || b.tsc <= a.tsc) {
		fprintf(stderr, "tsc_khz: the counter or the clock did not advance\n");
		return 1;
	}
	printf("%llu\n", (b.tsc - a.tsc) * 1000000ULL / (unsigned long long)(b.ns - a.ns));
	return 0;
}
