// SPDX-License-Identifier: GPL-2.0
/*
 * The sanitizer kernel's proofs (tests/guest/test_sanitizers.py): loading this module
 * does one wrong thing, the one its `bug` parameter names.
 *
 *   bug=read-past-end  reads the byte just past a 13-byte kmalloc buffer (KASAN)
 *   bug=leak           allocates 128 bytes and forgets the pointer (kmemleak)
 */
#include <linux/compiler.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

static char *bug = "";
module_param(bug, charp, 0444);

static noinline int sanitizer_proof_read_past_end(void)
{
	size_t size = 13;
	char *buf = kmalloc(size, GFP_KERNEL);
	char byte;

	if (!buf)
		return -ENOMEM;
	OPTIMIZER_HIDE_VAR(size);  /* no compile-time bounds warning: the read happens */
	byte = READ_ONCE(buf[size]);
	kfree(buf);
	return byte == 0x7f ? 1 : 0;  /* the byte is used, whatever it is */
}

static noinline int sanitizer_proof_leak(void)
{
	char *lost = kmalloc(128, GFP_KERNEL);

	if (!lost)
		return -ENOMEM;
	memset(lost, 0x5a, 128);  /* no word in it looks like a pointer */
	OPTIMIZER_HIDE_VAR(lost);
	return 0;
}

static int __init sanitizer_proof_init(void)
{
	if (!strcmp(bug, "read-past-end"))
		return sanitizer_proof_read_past_end() < 0 ? -ENOMEM : 0;
	if (!strcmp(bug, "leak"))
		return sanitizer_proof_leak();
	return -EINVAL;
}

static void __exit sanitizer_proof_exit(void)
{
}

module_init(sanitizer_proof_init);
module_exit(sanitizer_proof_exit);
MODULE_DESCRIPTION("roadtest: a module that reads out of bounds or leaks when loaded");
MODULE_LICENSE("GPL");
