// Guest side of the SPI benchmark: COUNT SPI_IOC_MESSAGE(2) ioctls on /dev/spidevB.C,
// a register read as register-style SPI chips take it (write the register number, then
// read two bytes, the chip select held), the SPI twin of i2c_rdwr_loop.c.
// Prints the seconds the loop took, by the guest's clock.
#include <fcntl.h>
#include <linux/spi/spidev.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s /dev/spidevB.C COUNT\n", argv[0]);
		return 2;
	}
	int fd = open(argv[1], O_RDWR);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	long count = strtol(argv[2], NULL, 0);
	unsigned char reg = 0x80, val[2];
	struct spi_ioc_transfer xfers[2];
	struct timespec t0, t1;

	memset(xfers, 0, sizeof(xfers));
	xfers[0].tx_buf = (uintptr_t)&reg;
	xfers[0].len = 1;
	xfers[1].rx_buf = (uintptr_t)val;
	xfers[1].len = 2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < count; i++) {
		if (ioctl(fd, SPI_IOC_MESSAGE(2), xfers) != 3) {
			perror("SPI_IOC_MESSAGE");
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%.9f\n", (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
