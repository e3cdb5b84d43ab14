# Getty login on the serial port (minitty.login=1): root/root or user/user.
::sysinit:/bin/hostname minitty
::respawn:/sbin/getty -L 115200 ttyAMA0 vt100
::shutdown:/bin/sync
