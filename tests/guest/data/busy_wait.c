// SPDX-License-Identifier: GPL-2.0
/*
 * A driver's busy-wait, at load (tests/guest/test_busy_wait.py): it polls without
 * sleeping for `ms` milliseconds, the way its `how` parameter names, and leaves the
 * guest time that took and the turns of its loop in its read-only parameters.
 *
 *   how=jiffies  until jiffies pass a deadline, cpu_relax() between reads
 *   how=ktime    until ktime_get_ns() passes a deadline, cpu_relax() between reads
 *   how=mdelay   mdelay(ms)
 */
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/string.h>

static char *how = "jiffies";
module_param(how, charp, 0444);
static unsigned int ms = 20;
module_param(ms, uint, 0444);
static unsigned long long took_ns;
module_param(took_ns, ullong, 0444);
static unsigned long turns;
module_param(turns, ulong, 0444);

static int __init busy_wait_init(void)
{
	u64 start = ktime_get_ns();

	if (!strcmp(how, "jiffies")) {
		unsigned long end = jiffies + msecs_to_jiffies(ms);

		while (time_before(jiffies, end)) {
			cpu_relax();
			turns++;
		}
	} else if (!strcmp(how, "ktime")) {
		u64 end = start + (u64)ms * NSEC_PER_MSEC;

		while (ktime_get_ns() < end) {
			cpu_relax();
			turns++;
		}
	} else if (!strcmp(how, "mdelay")) {
		mdelay(ms);
	} else {
		return -EINVAL;
	}
	took_ns = ktime_get_ns() - start;
	return 0;
}

static void __exit busy_wait_exit(void)
{
}

module_init(busy_wait_init);
module_exit(busy_wait_exit);
MODULE_DESCRIPTION("roadtest: a driver's busy-wait, for the simulated clock's tests");
MODULE_LICENSE("GPL");
