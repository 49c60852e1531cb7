// Two processes doing floating-point and AVX work while forcing context
// switches. Each keeps a pattern in all sixteen YMM registers across
// sched_yield() (asm, so nothing is spilled to memory) and checks it after,
// and computes a float series under its own rounding mode. Output is
// deterministic, so the guest's output must equal the host's.
#include <fenv.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 2000

static int ymm_survives_yield(uint64_t seed)
{
	uint64_t in[64], out[64];

	for (int i = 0; i < 64; i++)
		in[i] = seed * 0x9e3779b97f4a7c15ULL + i * 0xbf58476d1ce4e5b9ULL;
	memset(out, 0, sizeof(out));
	asm volatile(
		"vmovdqu 0(%0), %%ymm0\n\t"    "vmovdqu 32(%0), %%ymm1\n\t"
		"vmovdqu 64(%0), %%ymm2\n\t"   "vmovdqu 96(%0), %%ymm3\n\t"
		"vmovdqu 128(%0), %%ymm4\n\t"  "vmovdqu 160(%0), %%ymm5\n\t"
		"vmovdqu 192(%0), %%ymm6\n\t"  "vmovdqu 224(%0), %%ymm7\n\t"
		"vmovdqu 256(%0), %%ymm8\n\t"  "vmovdqu 288(%0), %%ymm9\n\t"
		"vmovdqu 320(%0), %%ymm10\n\t" "vmovdqu 352(%0), %%ymm11\n\t"
		"vmovdqu 384(%0), %%ymm12\n\t" "vmovdqu 416(%0), %%ymm13\n\t"
		"vmovdqu 448(%0), %%ymm14\n\t" "vmovdqu 480(%0), %%ymm15\n\t"
		"mov $24, %%eax\n\t" /* sched_yield */
		"syscall\n\t"
		"vmovdqu %%ymm0, 0(%1)\n\t"    "vmovdqu %%ymm1, 32(%1)\n\t"
		"vmovdqu %%ymm2, 64(%1)\n\t"   "vmovdqu %%ymm3, 96(%1)\n\t"
		"vmovdqu %%ymm4, 128(%1)\n\t"  "vmovdqu %%ymm5, 160(%1)\n\t"
		"vmovdqu %%ymm6, 192(%1)\n\t"  "vmovdqu %%ymm7, 224(%1)\n\t"
		"vmovdqu %%ymm8, 256(%1)\n\t"  "vmovdqu %%ymm9, 288(%1)\n\t"
		"vmovdqu %%ymm10, 320(%1)\n\t" "vmovdqu %%ymm11, 352(%1)\n\t"
		"vmovdqu %%ymm12, 384(%1)\n\t" "vmovdqu %%ymm13, 416(%1)\n\t"
		"vmovdqu %%ymm14, 448(%1)\n\t" "vmovdqu %%ymm15, 480(%1)\n\t"
		"vzeroupper\n\t"
		:
		: "r"(in), "r"(out)
		: "rax", "rcx", "r11", "memory",
		  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
		  "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
	return memcmp(in, out, sizeof(in)) == 0;
}

static void worker(int id)
{
	/* Different rounding per process: a leaked MXCSR changes the sums. */
	fesetround(id ? FE_TOWARDZERO : FE_UPWARD);
	volatile double sum = 0.0, x = 1.0 + id;
	long double ext = 0.0L;
	int bad = 0;

	for (int i = 1; i <= ROUNDS; i++) {
		sum += sqrt(x * i) / (i + 0.3);
		ext += (long double)sum / 3.0L; /* x87 state too */
		if (!ymm_survives_yield(id * ROUNDS + i))
			bad++;
	}
	uint64_t bits;
	double e = (double)ext;
	memcpy(&bits, (const void *)&sum, sizeof(bits));
	uint64_t ebits;
	memcpy(&ebits, &e, sizeof(ebits));
	printf("worker %d: sum=%016llx x87=%016llx ymm_mismatches=%d\n", id,
	       (unsigned long long)bits, (unsigned long long)ebits, bad);
	fflush(stdout);
}

int main(void)
{
	pid_t pids[2];

	for (int id = 0; id < 2; id++) {
		pids[id] = fork();
		if (pids[id] == 0) {
			worker(id);
			_exit(0);
		}
	}
	int failed = 0;
	for (int id = 0; id < 2; id++) {
		int status;
		waitpid(pids[id], &status, 0);
		failed |= !WIFEXITED(status) || WEXITSTATUS(status);
	}
	return failed;
}
