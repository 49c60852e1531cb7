"""The vhost-user backend: virtio-i2c and virtio-gpio devices served to the guest, in Python."""
