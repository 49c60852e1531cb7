// Guest side of the I2C benchmark: COUNT I2C_RDWR ioctls of two messages
// (write a register number, read two bytes back) on /dev/i2c-BUS at ADDR.
// Prints the seconds the loop took, by the guest's clock.
#include <fcntl.h>
#include <linux/i2c-dev.h>
#include <linux/i2c.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s /dev/i2c-N ADDR COUNT\n", argv[0]);
		return 2;
	}
	int fd = open(argv[1], O_RDWR);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	unsigned short addr = strtoul(argv[2], NULL, 0);
	long count = strtol(argv[3], NULL, 0);
	unsigned char reg = 0, val[2];
	struct i2c_msg msgs[2] = {
		{ .addr = addr, .flags = 0, .len = 1, .buf = &reg },
		{ .addr = addr, .flags = I2C_M_RD, .len = 2, .buf = val },
	};
	struct i2c_rdwr_ioctl_data data = { .msgs = msgs, .nmsgs = 2 };
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < count; i++) {
		if (ioctl(fd, I2C_RDWR, &data) != 2) {
			perror("I2C_RDWR");
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%.9f\n", (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
