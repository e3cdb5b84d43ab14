"""The flavours' architectures, from configs/flavours (column 5) and
configs/arches: the Python side of lib/arch.sh (same tables, same
meaning of each column)."""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
CONFIGS = os.path.join(ROOT, "configs")
COLUMNS = ("arch", "karch", "cross", "image", "qemu", "machine", "console",
           "uart", "debarch", "gdbarch", "setup", "compat", "elf")


def _rows(name):
    with open(os.path.join(CONFIGS, name), encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                yield line.split()


def arch_info(arch):
    """The columns of ARCH's line of configs/arches, as a dict (cross is
    "" for the host's own tools, compat "" for no compat arch, elf the
    rest of the line, console the
    port's name and console_arg the whole column)."""
    for row in _rows("arches"):
        if row[0] == arch:
            info = dict(zip(COLUMNS[:-1], row[:len(COLUMNS) - 1]))
            info["elf"] = " ".join(row[len(COLUMNS) - 1:])
            for k in ("cross", "compat"):
                if info[k] == "-":
                    info[k] = ""
            info["console_arg"] = info["console"]
            info["console"] = info["console"].split(",")[0]
            return info
    raise KeyError("no arch %s in configs/arches" % arch)


def qemu_program(arch, sandbox):
    """ARCH's QEMU program, as lib/arch.sh qemu_program: the one setup
    unpacked into SANDBOX/qemu, else the host's (on PATH)."""
    prog = arch_info(arch)["qemu"]
    path = os.path.join(sandbox, "qemu", "usr", "bin", prog)
    return path if os.access(path, os.X_OK) else prog


def flavour_arch(flavour):
    """FLAVOUR's arch (configs/flavours, column 5)."""
    base = flavour.split("+", 1)[0]
    for row in _rows("flavours"):
        if row[0] == base:
            return row[4]
    raise KeyError("no flavour %s in configs/flavours" % flavour)


def flavour_info(flavour):
    """arch_info of FLAVOUR's arch."""
    return arch_info(flavour_arch(flavour))


def console(flavour):
    """The name of FLAVOUR's serial port: ttyAMA0, ttyS0."""
    return flavour_info(flavour)["console"]


def uart(flavour):
    """The UART driver of FLAVOUR's serial port (configs/arches, column
    uart), as a dict: variable (its struct uart_driver: amba_reg,
    serial8250_reg), name (that struct's driver_name: ttyAMA, serial) and
    device (the driver of the port's device: uart-pl011, serial8250)."""
    return dict(zip(("variable", "name", "device"),
                    flavour_info(flavour)["uart"].split(":")))


def kernel_image(sandbox, flavour):
    """The kernel image FLAVOUR's guests boot."""
    return os.path.join(sandbox, "build", flavour, flavour_info(flavour)["image"])


def initramfs(sandbox, flavour):
    """The initramfs of FLAVOUR's arch."""
    return os.path.join(sandbox, "rootfs", flavour_arch(flavour), "initramfs.cpio.gz")
